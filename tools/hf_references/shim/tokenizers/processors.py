"""tokenizers.processors placeholder: see __init__.py."""
from tokenizers import __getattr__  # noqa: F401  (PEP 562: the module's own attribute hook)
