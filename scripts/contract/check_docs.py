"""The browser check of GET /docs: the page rendered by headless Chromium (Debian's) lists every
path of the OpenAPI document. Prints what it found; exits 1 if a path is missing.

Usage: python3 check_docs.py http://127.0.0.1:PORT
"""

import json
import re
import subprocess
import sys
import tempfile
import urllib.request

base = sys.argv[1]
document = json.load(urllib.request.urlopen(f"{base}/v1/openapi.json"))
paths = set(document["paths"])
with tempfile.TemporaryDirectory() as profile:
    # The flags keep Chromium off the network it cannot reach here (it would retry at length).
    dom = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", "--virtual-time-budget=20000", "--dump-dom", f"{base}/docs"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
rendered = set(re.findall(r'data-path="([^"]*)"', dom))
title = document["info"]["title"]
missing = sorted(paths - rendered)
print(f"docs: the page rendered {len(rendered)} of the document's {len(paths)} paths; title shown: {title in dom}")
if missing or title not in dom:
    print(f"docs: missing from the page: {missing}")
    sys.exit(1)
