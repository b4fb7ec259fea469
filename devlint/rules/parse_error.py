from __future__ import annotations

from devlint.rules.base import Invalid, Rule


class ParseError(Rule):
    """
    ## What it does
    Reports a file devlint cannot read or parse: a syntax error (with its line
    and column), bytes that are not valid in the file's encoding, a file that
    cannot be read. The run goes on with the other files.

    ## Why is this bad?
    A file devlint cannot parse is a file it cannot check: any device bug in it
    goes unseen. Python itself would fail on it too.

    ## Example
    ```python
    def train(:
        pass
    ```

    ## Use instead
    Fix the syntax error, or exclude the file (`extend-exclude` in
    `[tool.devlint]`) when it is not Python 3.

    ## Fix safety
    No automatic fix.
    """

    code = "DEV000"
    name = "parse-error"
    summary = "file cannot be read or parsed"

    VALID = ("x = 1",)
    INVALID = (
        Invalid("def train(:\n    pass", 1, 11, "syntax error"),
        Invalid("print 'hello'", 1, 1, "Missing parentheses in call to 'print'"),
    )
