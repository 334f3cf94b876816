"""fogline for Python: a client of fogline's native protocol.

asyncio at its core (:func:`connect`, :class:`Client`), a synchronous facade over the
same code in :mod:`fogline.sync`, and the HTTP admin API in :mod:`fogline.admin`::

    import asyncio, fogline

    async def main():
        async with fogline.connect("127.0.0.1:7766") as client:
            await client.publish("site/r1/temp", b"21.5", ack=True)
            async for msg in client.replay("default", ago=60):
                print(msg.offset, msg.topic, msg.payload)

    asyncio.run(main())
"""

from .client import Client, connect
from .consumer import Consumer
from .errors import (
    ConnectionClosedError,
    DuplicateError,
    ErrorCode,
    FoglineError,
    InvalidError,
    InvalidFilterError,
    InvalidTopicError,
    MessageTooLargeError,
    NotConnectedError,
    ProtocolError,
    ServerError,
    SlowConsumerError,
    BadCredentialsError,
    NotAuthorizedError,
    TimeoutError,
    UnknownConsumerError,
    UnknownStreamError,
)
from .message import ConsumerInfo, Message, QueryPage, StreamInfo
from .subscription import Announcement, Subscription

__version__ = "0.1.0"

__all__ = [
    "Announcement",
    "Client",
    "ConnectionClosedError",
    "Consumer",
    "ConsumerInfo",
    "DuplicateError",
    "ErrorCode",
    "FoglineError",
    "InvalidError",
    "InvalidFilterError",
    "InvalidTopicError",
    "Message",
    "MessageTooLargeError",
    "NotConnectedError",
    "ProtocolError",
    "QueryPage",
    "ServerError",
    "SlowConsumerError",
    "BadCredentialsError",
    "NotAuthorizedError",
    "StreamInfo",
    "Subscription",
    "TimeoutError",
    "UnknownConsumerError",
    "UnknownStreamError",
    "connect",
]
