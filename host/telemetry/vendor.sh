#!/bin/sh
# Re-vendor the live page's JavaScript from npm (host/telemetry/page/vendor/): the built
# files of each package at the version in VERSIONS, with its licence. Run from anywhere;
# needs npm. Change a version in VERSIONS, run this, commit what changed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest="$here/page/vendor"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
while read -r pkg version files; do
    case "$pkg" in ''|'#'*) continue ;; esac
    (cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null && mkdir "$pkg" && tar xzf "$pkg-$version.tgz" -C "$pkg")
    for f in $(echo "$files" | tr ',' ' '); do
        cp "$tmp/$pkg/package/$f" "$dest/$(basename "$f")"
    done
    cp "$tmp/$pkg/package/LICENSE" "$dest/LICENSE.$pkg"
done < "$dest/VERSIONS"
