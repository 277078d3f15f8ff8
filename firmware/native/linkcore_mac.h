// linkcore's MAC of protected frames (bus_protocol/SPEC.md §9): HMAC-SHA256 (RFC 2104,
// FIPS 180-4) truncated to MAC_BYTES, with no interpreter in it. The key's inner and outer
// chaining values (SHA-256 after the key block xor ipad, xor opad: RFC 2104 §4's
// precomputation) are made once when the key is loaded (mac_key_states) and kept as 64
// bytes, big-endian words; a MAC then costs the compressions of the message and of the
// inner digest only (a GOAL's 55-byte MAC input: one each) and allocates nothing.
// bus_protocol/mac.py (hashlib) stays the reference: tests/test_auth.py, tests/test_mcu.py.
// Included after linkcore_core.h (crc16, put_u32; HEADER, MAC_BYTES, AUTH_TRAILER: the layout).

#define MAC_STATES 64   // bytes: inner then outer chaining value, 8 big-endian words each

// FIPS 180-4 §4.2.2
static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

// FIPS 180-4 §5.3.3
static const uint32_t sha_iv[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

static uint32_t ror32(uint32_t x, int r) {
    return (x >> r) | (x << (32 - r));
}

static uint32_t get_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = v >> 24;
    p[1] = v >> 16;
    p[2] = v >> 8;
    p[3] = v;
}

// one SHA-256 compression of the 64-byte block b into h (FIPS 180-4 §6.2.2; the message
// schedule in a ring of 16 words)
static void sha_compress(uint32_t *h, const uint8_t *b) {
    uint32_t w[16];
    uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t wt;
        if (t < 16) {
            wt = get_be32(b + 4 * t);
        } else {
            uint32_t w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
            wt = w[t & 15] + (ror32(w15, 7) ^ ror32(w15, 18) ^ (w15 >> 3)) + w[(t - 7) & 15]
                + (ror32(w2, 17) ^ ror32(w2, 19) ^ (w2 >> 10));
        }
        w[t & 15] = wt;
        uint32_t t1 = hh + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[t] + wt;
        uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = bb;
        bb = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += bb;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

// SHA-256 of (pre bytes already in h) ‖ p[:np] ‖ q[:nq], finished (padding and length,
// FIPS 180-4 §5.1.1), its digest into out (32 bytes); h is used up
static void sha_finish(uint32_t *h, uint32_t pre, const uint8_t *p, size_t np, const uint8_t *q, size_t nq,
    uint8_t *out) {
    uint8_t blk[64];
    size_t fill = 0;
    for (size_t i = 0; i < np + nq; i++) {
        blk[fill++] = i < np ? p[i] : q[i - np];
        if (fill == 64) {
            sha_compress(h, blk);
            fill = 0;
        }
    }
    blk[fill++] = 0x80;
    if (fill > 56) {
        while (fill < 64) {
            blk[fill++] = 0;
        }
        sha_compress(h, blk);
        fill = 0;
    }
    while (fill < 56) {
        blk[fill++] = 0;
    }
    uint64_t bits = ((uint64_t)pre + np + nq) * 8;
    put_be32(blk + 56, (uint32_t)(bits >> 32));
    put_be32(blk + 60, (uint32_t)bits);
    sha_compress(h, blk);
    for (int i = 0; i < 8; i++) {
        put_be32(out + 4 * i, h[i]);
    }
}

// the key's inner and outer chaining values into ks (MAC_STATES bytes), RFC 2104 §2: a
// key longer than the block is hashed first
static void mac_key_states(uint8_t *ks, const uint8_t *key, size_t len) {
    uint8_t k[64];
    uint32_t h[8];
    size_t i;
    for (i = 0; i < 64; i++) {
        k[i] = 0;
    }
    if (len > 64) {
        for (i = 0; i < 8; i++) {
            h[i] = sha_iv[i];
        }
        sha_finish(h, 0, key, len, NULL, 0, k);
    } else {
        for (i = 0; i < len; i++) {
            k[i] = key[i];
        }
    }
    for (int side = 0; side < 2; side++) {
        uint8_t pad = side ? 0x5c : 0x36;
        uint8_t b[64];
        for (i = 0; i < 64; i++) {
            b[i] = k[i] ^ pad;
        }
        for (i = 0; i < 8; i++) {
            h[i] = sha_iv[i];
        }
        sha_compress(h, b);
        for (i = 0; i < 8; i++) {
            put_be32(ks + 32 * side + 4 * i, h[i]);
        }
    }
}

// HMAC-SHA256(key of ks, p[:np] ‖ q[:nq]) into out (32 bytes)
static void mac_sum(const uint8_t *ks, const uint8_t *p, size_t np, const uint8_t *q, size_t nq, uint8_t *out) {
    uint32_t h[8];
    uint8_t inner[32];
    for (int i = 0; i < 8; i++) {
        h[i] = get_be32(ks + 4 * i);
    }
    sha_finish(h, 64, p, np, q, nq, inner);
    for (int i = 0; i < 8; i++) {
        h[i] = get_be32(ks + 32 + 4 * i);
    }
    sha_finish(h, 64, inner, 32, NULL, 0, out);
}

// the MAC of the protected frame f[:n] checks with the FV's high 32 bits fv_hi (SPEC §9:
// HMAC over bytes 0 .. n-7 ‖ fv_hi as u32 LE, its first MAC_BYTES at n-6); every byte
// compared (no early exit to time). Length and CRC are the caller's.
static bool mac_check(const uint8_t *ks, const uint8_t *f, size_t n, uint32_t fv_hi) {
    if (n < HEADER + AUTH_TRAILER + 2) {
        return false;
    }
    size_t at = n - 2 - MAC_BYTES;
    uint8_t hi[4], d[32];
    put_u32(hi, fv_hi);
    mac_sum(ks, f, at, hi, 4, d);
    unsigned x = 0;
    for (int i = 0; i < MAC_BYTES; i++) {
        x |= d[i] ^ f[at + i];
    }
    return x == 0;
}

// the plain frame of the protected f[:n] into out (trailer cut, len and CRC made again:
// messages.strip_into); -> its length. out may be f.
static size_t mac_strip(const uint8_t *f, size_t n, uint8_t *out) {
    size_t end = n - 2 - AUTH_TRAILER;
    for (size_t i = 0; i < end; i++) {
        out[i] = f[i];
    }
    out[5] = end - HEADER;
    unsigned c = crc16(out, end);
    out[end] = c & 0xff;
    out[end + 1] = c >> 8;
    return end + 2;
}
