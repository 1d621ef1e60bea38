import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "zeromem.settings")
application = get_wsgi_application()
# What the app loaded lives as long as the process: out of the garbage collector's reach, a full collection during a
# request scans only what requests made (it scanned every module, model and URL pattern before).
gc.freeze()
