"""devlint: find PyTorch device bugs before they reach a GPU box."""

__version__ = "0.1.0"
