"""Exceptions of the fogline SDK.

Every failure is a :class:`FoglineError`. A refusal by the server is a
:class:`ServerError` carrying the protocol's error code (:class:`ErrorCode`, stable
numbers from PROTOCOL.md); the common codes have a subclass each, so callers can
``except UnknownStreamError`` or test ``err.code == ErrorCode.UNKNOWN_STREAM``.
"""

from __future__ import annotations

import enum
from typing import Dict, Type, Union

__all__ = [
    "ErrorCode",
    "FoglineError",
    "ConnectionClosedError",
    "NotConnectedError",
    "TimeoutError",
    "ProtocolError",
    "ServerError",
    "MessageTooLargeError",
    "InvalidTopicError",
    "InvalidFilterError",
    "UnknownStreamError",
    "UnknownConsumerError",
    "DuplicateError",
    "InvalidError",
    "SlowConsumerError",
    "server_error",
]


class ErrorCode(enum.IntEnum):
    """The native protocol's error codes (never reused)."""

    MALFORMED = 1
    UNKNOWN_FRAME = 2
    FRAME_TOO_LARGE = 3
    MESSAGE_TOO_LARGE = 4
    UNSUPPORTED_VERSION = 5
    INVALID_TOPIC = 6
    INVALID_FILTER = 7
    UNKNOWN_STREAM = 8
    UNKNOWN_CONSUMER = 9
    UNKNOWN_SUBSCRIPTION = 10
    SLOW_CONSUMER = 11
    STORAGE_FAILED = 12
    NOT_CONNECTED = 13
    DUPLICATE = 14
    SERVER_SHUTDOWN = 15
    INTERNAL = 16
    INVALID_NAME = 17
    TOO_MANY = 18
    EMPTY_REQUEST = 19
    INVALID = 20
    NOT_FOUND = 21
    DATA_LOST = 22
    FRAME_TIMEOUT = 23
    BAD_CREDENTIALS = 24
    NOT_AUTHORIZED = 25


class FoglineError(Exception):
    """Base of every error the SDK raises."""


class ConnectionClosedError(FoglineError):
    """The connection was lost or closed before the operation completed.

    For an acknowledged publish, the records may or may not have been stored: publish
    them again (at least once)."""


class NotConnectedError(ConnectionClosedError):
    """The client is reconnecting (or closed); the request was not sent."""


class TimeoutError(FoglineError):  # noqa: A001 - deliberately scoped to this package
    """No answer within the timeout."""


class ProtocolError(FoglineError):
    """The server sent something the protocol does not allow."""


class ServerError(FoglineError):
    """The server refused a request: ``code`` is the protocol's error code."""

    code: Union[ErrorCode, int]
    message: str

    def __init__(self, code: int, message: str) -> None:
        try:
            self.code = ErrorCode(code)
        except ValueError:  # a code newer than this SDK: kept as it is
            self.code = code
        self.message = message
        name = self.code.name if isinstance(self.code, ErrorCode) else "code"
        super().__init__(f"{name} ({int(code)}): {message}")


class MessageTooLargeError(ServerError):
    """A record larger than the server's ``max_message`` (code 4)."""


class InvalidTopicError(ServerError):
    """A topic that breaks the topic rules (code 6)."""


class InvalidFilterError(ServerError):
    """A filter that breaks the filter rules (code 7)."""


class UnknownStreamError(ServerError):
    """No such stream (code 8)."""


class UnknownConsumerError(ServerError):
    """No such consumer (code 9)."""


class DuplicateError(ServerError):
    """It exists already or is open elsewhere (code 14)."""


class InvalidError(ServerError):
    """A bad setting, name or interest (codes 17 and 20)."""


class BadCredentialsError(ServerError):
    """The node refused the login: a wrong user name or password, or none where it admits
    no anonymous clients (code 24). Permanent: the client does not reconnect with it."""


class NotAuthorizedError(ServerError):
    """The node's ACL does not let this user do it (code 25)."""


class SlowConsumerError(ServerError):
    """The server disconnected a subscriber that fell behind (code 11)."""


_CLASSES: Dict[int, Type[ServerError]] = {
    ErrorCode.MESSAGE_TOO_LARGE: MessageTooLargeError,
    ErrorCode.INVALID_TOPIC: InvalidTopicError,
    ErrorCode.INVALID_FILTER: InvalidFilterError,
    ErrorCode.UNKNOWN_STREAM: UnknownStreamError,
    ErrorCode.UNKNOWN_CONSUMER: UnknownConsumerError,
    ErrorCode.DUPLICATE: DuplicateError,
    ErrorCode.INVALID_NAME: InvalidError,
    ErrorCode.INVALID: InvalidError,
    ErrorCode.SLOW_CONSUMER: SlowConsumerError,
    ErrorCode.BAD_CREDENTIALS: BadCredentialsError,
    ErrorCode.NOT_AUTHORIZED: NotAuthorizedError,
}


def server_error(code: int, message: str) -> ServerError:
    """The exception for an Error frame's code and message."""
    return _CLASSES.get(code, ServerError)(code, message)
