FROM python:3.11-slim

WORKDIR /app
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY requirements.lock pyproject.toml README.md ./
RUN pip install --no-cache-dir uv \
    && uv pip install --system --no-cache -r requirements.lock
COPY switchboard ./switchboard
COPY channels ./channels
COPY agent ./agent
COPY storage ./storage
COPY service ./service
RUN uv pip install --system --no-cache --no-deps .

RUN useradd --create-home switchboard
USER switchboard
ENV SWITCHBOARD_HTTP_HOST=0.0.0.0 SWITCHBOARD_LOG_FORMAT=json
EXPOSE 8080
CMD ["switchboard", "serve"]
