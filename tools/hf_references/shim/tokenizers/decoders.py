"""tokenizers.decoders placeholder: see __init__.py."""


class _Inert:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("the tokenizers placeholder was called; use a slow tokenizer")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (_Inert,), {})
