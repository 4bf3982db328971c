"""Schemathesis hooks for the contract fuzzing (scripts/contract.sh): credentials as a real
client sends them, so generated requests reach past authentication.

- every request carries the signed-in wallet's bearer token (FM_FUZZ_TOKEN), except
- the deposit webhook, which carries its shared secret (FM_FUZZ_WEBHOOK_AUTH), and
- operations that need the anti-replay headers get a fresh nonce and the current time, unless
  the generated case set them itself (negative cases that test the headers).
"""

import os
import secrets
import time

import schemathesis

TOKEN = os.environ["FM_FUZZ_TOKEN"]
WEBHOOK_AUTH = os.environ["FM_FUZZ_WEBHOOK_AUTH"]


def _schemes(case):
    security = case.operation.definition.raw.get("security") or []
    return {name for requirement in security for name in requirement}


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    headers = dict(case.headers or {})
    names = {name.lower() for name in headers}
    if "authorization" not in names:
        if case.operation.path == "/v1/webhooks/deposits":
            headers["Authorization"] = WEBHOOK_AUTH
        else:
            headers["Authorization"] = f"Bearer {TOKEN}"
    if "request_nonce" in _schemes(case) and "x-request-nonce" not in names:
        headers["X-Request-Nonce"] = secrets.token_hex(16)
        headers["X-Request-Timestamp"] = str(int(time.time()))
    case.headers = headers
