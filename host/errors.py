"""The error a bad scenario raises: it names the file, the line (where known) and the field."""


class ScenarioError(ValueError):
    def __init__(self, path, line, field, message):
        self.path, self.line, self.field = str(path), line, field
        where = "%s:%s" % (path, line) if line else str(path)
        super().__init__("%s: %s: %s" % (where, field, message))


class UsageError(ValueError):
    """Bad input to a command (not a scenario's): the CLI prints the message on one line
    and exits with status 2."""
