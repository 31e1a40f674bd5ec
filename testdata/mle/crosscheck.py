#!/usr/bin/env python3
"""Independent check of the SHA-256 suite vectors in vectors.json with Python's hashlib and
the `cryptography` package (pip install cryptography): recomputes every "ok" vector from the
spec in docs/formats/mle.md without any of veil's code."""
import hashlib, json, os, sys
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

H = lambda b: hashlib.sha256(b).digest()
def E(k, m):
    e = Cipher(algorithms.AES(k), modes.CTR(b"\0" * 16)).encryptor()
    return e.update(m) + e.finalize()

vs = json.load(open(os.path.join(os.path.dirname(__file__), "vectors.json")))
n = 0
for v in vs:
    if v["suite"] != 1 or v["result"] != "ok":
        continue
    m = bytes.fromhex(v["message"]); k = H(m); hdr = bytes([1, v["scheme"]])
    if v["scheme"] == 1:
        c = hdr + E(k, m); t = H(c)
    elif v["scheme"] in (2, 3):
        c = hdr + E(k, m) + H(k); t = H(k)
    else:
        L = bytes.fromhex(v["rand"])
        c = hdr + E(L, m) + bytes(a ^ b for a, b in zip(L, k)) + H(k); t = H(k)
    if (k.hex(), c.hex(), t.hex()) != (v["key"], v["ciphertext"], v["tag"]):
        sys.exit(f"mismatch: {v}")
    n += 1
print(f"ok: {n} SHA-256 suite vectors recomputed independently")
