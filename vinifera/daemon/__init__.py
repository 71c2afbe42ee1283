"""The peer daemon: the pure protocol core driven by trio on real sockets."""
