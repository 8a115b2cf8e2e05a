#!/usr/bin/env python3
# Run on a fresh `cargo doc --no-deps --all-features -p csi-proxy-client` (remove
# target/doc/csi_proxy_client first: rustdoc leaves pages of removed items).
"""Count the public items of csi_proxy_client::host as rustdoc documents them.

Items: every item page under target/doc/csi_proxy_client/host/ (modules,
structs, enums, traits, functions, constants, type aliases, statics; redirect
pages skipped), plus on each struct/enum/trait page the inherent methods,
associated constants, public fields and enum variants (anchors before the
"Trait Implementations" section, so derived/impl'd trait methods are not counted).
"""
import os, re, sys, collections
root = sys.argv[1] if len(sys.argv) > 1 else "target/doc/csi_proxy_client/host"
c = collections.Counter()
for d, _, files in os.walk(root):
    for f in files:
        if not f.endswith(".html"):
            continue
        p = os.path.join(d, f)
        s = open(p, encoding="utf-8").read()
        if 'http-equiv="refresh"' in s:
            continue
        if f == "index.html":
            c["mod"] += 1
            continue
        if f in ("all.html", "sidebar-items.js"):
            continue
        kind = f.split(".")[0]
        c[kind] += 1
        cut = s.find('id="trait-implementations"')
        body = s if cut < 0 else s[:cut]
        # synthetic/blanket sections come after trait implementations; inherent impls come first
        for a in ("method", "tymethod", "associatedconstant", "structfield", "variant"):
            c[a] += len(re.findall(r'id="%s\.[A-Za-z0-9_-]+"' % a, body))
total = sum(c.values())
print(total, dict(sorted(c.items())))
