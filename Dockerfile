FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .
# The admin's and the API pages' static files, served by WhiteNoise from /app/staticfiles.
RUN DJANGO_SECRET_KEY=build AHPD_DATA_DIR=/tmp/build python manage.py collectstatic --noinput -v0 \
    && rm -rf /tmp/build
EXPOSE 9187
CMD ["sh", "-c", "python manage.py migrate --verbosity 0 && python manage.py serve"]
