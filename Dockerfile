# The service image: runtime dependencies only (requirements-runtime.lock has no pytest, ruff,
# hypothesis, ...). Build with `docker compose build` or `docker build -t switchboard .`.
FROM python:3.11-slim

WORKDIR /app
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY requirements-runtime.lock pyproject.toml README.md ./
RUN pip install --no-cache-dir uv \
    && uv pip install --system --no-cache -r requirements-runtime.lock \
    && pip uninstall -y uv
COPY switchboard ./switchboard
COPY channels ./channels
COPY agent ./agent
COPY storage ./storage
COPY service ./service
RUN pip install --no-cache-dir --no-deps . && rm -rf build *.egg-info

RUN useradd --create-home switchboard
USER switchboard
ENV SWITCHBOARD_HTTP_HOST=0.0.0.0 SWITCHBOARD_LOG_FORMAT=json SWITCHBOARD_DATA_DIR=/home/switchboard/data
EXPOSE 8080
# Ready = Redis answers and every configured channel is connected (no curl in the slim image).
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request as u; sys.exit(u.urlopen('http://127.0.0.1:8080/readyz', timeout=4).status != 200)"]
CMD ["switchboard", "serve"]
