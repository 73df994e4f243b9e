"""The one exception type every command raises; `cli.main` catches it once."""


class JitterscopeError(Exception):
    """An error to show the user as one line, ending the command with `exit_code`.

    Exit code 2 means bad input or an unusable environment (the default);
    1 is reserved for "the tool worked and found a problem" (e.g. a regression).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(JitterscopeError):
    """Bad input from the user: exit code 2."""
