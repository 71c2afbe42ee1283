"""Local swarms of real daemons: processes, network namespaces or containers."""
