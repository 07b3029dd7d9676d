"""How bodies cross the wire and are written down, byte for byte (DESIGN §3).

    _bodies       a body as stored: JSON kept exact, text, base64, streams
    _eventstream  AWS event-stream frames, as readable events and back
    _multipart    a multipart body, split into its parts
    _protobuf     a protobuf message as readable JSON, and back to its exact bytes

May import: `_core`.
"""
