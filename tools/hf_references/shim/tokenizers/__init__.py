"""An import-only placeholder for the `tokenizers` package (Rust; not in Debian 12).
transformers 4.44 imports it at module level from `convert_slow_tokenizer`, which the T5
and mT5 packages pull in while `transformers.models` loads, even when only slow (pure
Python) tokenizers are used. Every name here is an inert class; with no dist-info beside
it, `transformers.utils.is_tokenizers_available()` stays False, so nothing ever calls it.
The references use the slow MarianTokenizer and BartTokenizer only."""


class _Inert:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("the tokenizers placeholder was called; use a slow tokenizer")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (_Inert,), {})
