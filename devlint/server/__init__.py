"""`devlint server`: devlint's findings, fixes and rule documentation in the editor (LSP).

Needs the `server` extra (pygls and lsprotocol); the linter itself never imports this package.
"""
