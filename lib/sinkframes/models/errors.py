"""Errors raised while resolving or loading a model; each message says what to do."""


class ModelLoadError(RuntimeError):
    """A model reference that cannot be resolved or loaded; the message says what to do."""


class AttentionUnavailableError(RuntimeError):
    """The model returned no attention weights (e.g. an SDPA or flash implementation)."""


class UnsupportedArchitectureError(ValueError):
    """The model's attention modules are not known to the attention hook."""


#: what a reader does about a gated repository (Llama, Gemma, Mistral) on Colab or elsewhere
LOGIN_STEPS = (
    "accept its licence on https://huggingface.co/{repo} while logged in to your Hugging Face account, then give "
    "this machine a token: on Colab add a secret named HF_TOKEN (the key icon in the left bar) and allow this "
    "notebook to read it; elsewhere run `hf auth login` (or `from huggingface_hub import login; login()`) or set "
    "the HF_TOKEN environment variable"
)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def hub_access_problem(ref: str, exc: BaseException) -> str | None:
    """What to do when the hub refused ``ref`` (a gated repository without access, or a repository that does not
    exist or is private); ``None`` for other failures. Reads the huggingface_hub error behind transformers' own."""
    names = {type(e).__name__ for e in _chain(exc)}
    text = " ".join(str(e) for e in _chain(exc))
    if "GatedRepoError" in names or "gated repo" in text.lower():
        return (f"{ref!r} is a gated repository and this machine has no access to it: "
                + LOGIN_STEPS.format(repo=ref) + ". Then run the cell again.")
    if "RepositoryNotFoundError" in names:
        return (f"the hub has no repository {ref!r}, or it is private: check the spelling (ORG/NAME, as on its "
                "model page); a private repository needs a login (HF_TOKEN) with access to it")
    if "RevisionNotFoundError" in names:
        return f"the hub repository {ref!r} has no such revision: check the revision (e.g. 'step1000' for Pythia)"
    return None
