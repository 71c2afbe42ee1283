# One Vinifera peer per container. Build:  docker build -t vinifera .
# (base image as a build argument: --build-arg BASE=python:3.11-slim)
ARG BASE=python:3.11-slim
FROM ${BASE}

LABEL org.opencontainers.image.title="vinifera" \
      org.opencontainers.image.description="Vinifera content-based publish/subscribe peer" \
      org.opencontainers.image.licenses="Apache-2.0"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/vinifera
COPY pyproject.toml README.md ./
COPY vinifera ./vinifera
COPY cli ./cli
COPY churn_traces ./churn_traces
COPY analysis ./analysis
RUN python3 -m pip install --no-cache-dir . \
    && useradd --create-home --uid 10001 vinifera

USER 10001
WORKDIR /home/vinifera
EXPOSE 7000/udp
# e.g. docker run vinifera vinifera-node run --listen 0.0.0.0:7000 --advertise IP:7000 ...
CMD ["vinifera-node", "--help"]
