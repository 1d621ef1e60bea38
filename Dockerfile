FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY zeromem zeromem
COPY consolidation consolidation
COPY profiles profiles
COPY manage.py ./
RUN pip install --no-cache-dir .
EXPOSE 8000
