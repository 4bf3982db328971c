#!/usr/bin/env bash
# Refreshes the documentation renderer served at /docs from its npm package (Swagger UI),
# vendored under api/assets/swagger-ui so the service never loads it from a CDN.
# Usage: bash scripts/vendor-docs.sh [version]   (default: the version below)
set -euo pipefail
version="${1:-5.35.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "swagger-ui-dist@$version" >/dev/null && tar xzf "swagger-ui-dist-$version.tgz")
dest="$root/api/assets/swagger-ui"
mkdir -p "$dest"
for f in swagger-ui-bundle.js swagger-ui.css LICENSE NOTICE swagger-ui-bundle.js.LICENSE.txt; do
  cp "$work/package/$f" "$dest/$f"
done
echo "$version" > "$dest/VERSION"
echo "vendored swagger-ui-dist $version into $dest"
