"""Schemathesis hooks for the contract fuzzing (scripts/contract.sh): credentials as a real
client sends them, so generated requests reach past authentication.

- every request carries the signed-in wallet's bearer token (FM_FUZZ_TOKEN), except
- the deposit webhook, which carries its shared secret (FM_FUZZ_WEBHOOK_AUTH), and
- operations that need the anti-replay headers get a fresh nonce and the current time, each
  unless the generated case set it itself: the document declares `X-Request-Nonce`,
  `X-Request-Timestamp` (any 64-bit integer) and `X-API-Key` as header parameters, so the
  generator also sends them with extreme values (i64 bounds, non-numeric, huge), and every
  answer to those must still be a 4xx.
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
    if "request_nonce" in _schemes(case):
        if "x-request-nonce" not in names:
            headers["X-Request-Nonce"] = secrets.token_hex(16)
        if "x-request-timestamp" not in names:
            headers["X-Request-Timestamp"] = str(int(time.time()))
    case.headers = headers
