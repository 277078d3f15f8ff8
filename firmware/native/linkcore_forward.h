// The node's cut-through forwarder in C: firmware/accel/forward.py `cut`, its reference,
// on the node's buffer block (firmware/layout.py BLK_*, linkcore_layout.h). A read's
// whole frames are passed on as received (COBS bytes, the destination peeked, never
// decoded) to the one port the block's routing table names for their destination and
// the port they came from; the node's own (its MINE_* bits) are COBS-decoded into the
// block's pool. Shared by the boards' native module (linkcore.c) and the CPython
// extension (linkcore_cpython.c); tests/test_forward_c.py holds it equal to forward.cut.
#ifndef LINKCORE_FORWARD_H
#define LINKCORE_FORWARD_H

#include <stdint.h>

#include "linkcore_layout.h"

#define FW_STOP (-2)   // fw_wave: too short to tell, left to the node (_pump)
#define FW_SKIP (-3)   // fw_wave: the other goal wave's copy, handled by being dropped

// index of the first 0x00 in d[i:n], or -1 (forward.find0)
static int fw_find0(const uint8_t *d, int i, int n) {
    for (; i < n; i++) {
        if (d[i] == 0) {
            return i;
        }
    }
    return -1;
}

// byte k of the frame COBS-encoded in d[i:j], or -1 if the frame is shorter or
// malformed (forward.cobs_peek; SPEC.md "UART": a code byte c is followed by c - 1
// data bytes and stands for a 0x00 unless c == 0xFF)
static int fw_peek(const uint8_t *d, int i, int j, int k) {
    int out = 0;
    while (i < j) {
        int code = d[i];
        if (code == 0) {
            return -1;
        }
        if (k < out + code - 1) {
            int p = i + 1 + k - out;
            return p < j ? d[p] : -1;
        }
        out += code - 1;
        i += code;
        if (code < 0xFF) {
            if (k == out) {
                return i < j ? 0 : -1;
            }
            out++;
        }
    }
    return -1;
}

// d[i:j] COBS-decoded into out[0:cap]: its length, or -1 if malformed or longer than cap
// (framing.cobs_decode_at, whose bytes it writes also where it fails)
static int fw_decode(const uint8_t *d, int i, int j, uint8_t *out, int cap) {
    int o = 0;
    while (i < j) {
        int code = d[i];
        if (code == 0) {
            return -1;
        }
        i++;
        int end = i + code - 1;
        if (end > j || o + end - i > cap) {
            return -1;
        }
        while (i < end) {
            out[o++] = d[i++];
        }
        if (code < 0xFF && i < j) {
            if (o >= cap) {
                return -1;
            }
            out[o++] = 0;
        }
    }
    return o;
}

// a ring's goal waves (firmware/node.py _ring_admits) for a broadcast d[i:j]: 0 where
// it is handled as on a chain, FW_SKIP for the other wave's copy of a tick whose GOAL
// has passed (the node holds a tick once its GOAL passed the check, node.py _goal_wave;
// never here), FW_STOP where the frame is too short to tell
static int fw_wave(const uint8_t *d, int i, int j, const uint8_t *blk) {
    int mt = fw_peek(d, i, j, 0);
    if (mt != T_GOAL && mt != T_ASSERT) {
        return 0;
    }
    if (j - i < HEADER + 2) {
        return FW_STOP;
    }
    int tick = fw_peek(d, i, j, HEADER);
    return blk[BLK_RING_HELD] && blk[BLK_RING_TICK] == tick ? FW_SKIP : 0;
}

// d[i:j] and its delimiter onto the transmit buffer of port `side` (1 up, 2 down)
static void fw_pass(const uint8_t *d, int i, int j, uint8_t *blk, int side) {
    uint8_t *q = blk + BLK_QUEUED - 1 + side;
    uint8_t *out = blk + BLK_TX + (side - 1) * TX + *q;
    for (int p = i; p < j; p++) {
        *out++ = d[p];
    }
    *out = 0;
    *q += j - i + 1;
}

// d[i:j] (4 <= j - i <= MAX_WIRE, no 0x00) from the port `down` names (0 up, 1 down):
// passed on where the table says, decoded into the pool where it is the node's own;
// -> 0 where it needs the node (neither, no room to pass it, the pool full, a ring's
// goal too short to tell), else 1 (handled), *passed counting the frames passed on
static int fw_frame(const uint8_t *d, int i, int j, uint8_t *blk, int down, int *passed) {
    int dst = fw_peek(d, i, j, 2);
    if (dst == BROADCAST && blk[BLK_RING]) {
        int wave = fw_wave(d, i, j, blk);
        if (wave == FW_STOP) {
            return 0;
        }
        if (wave == FW_SKIP) {
            return 1;
        }
    }
    int v = blk[BLK_TAB + dst];
    int side = v >> 2 * down & 3;
    int mine = v >> (6 + down) & 1;
    int f = blk[BLK_NMINE];
    if ((!side && !mine) || (side && blk[BLK_QUEUED - 1 + side] > ROOM) || (mine && f >= POOL)) {
        return 0;
    }
    if (side) {
        fw_pass(d, i, j, blk, side);
        (*passed)++;
    }
    if (mine) {
        int r = fw_decode(d, i, j, blk + BLK_POOL + f * POOL_FRAME, POOL_FRAME);
        if (r < 0) {
            blk[BLK_BAD]++;
        } else {
            blk[BLK_MINE_N + f] = r;
            blk[BLK_NMINE] = f + 1;
        }
    }
    return 1;
}

// the block's counters after a call: the frames passed on (uint32 LE), handled (uint16 LE)
static void fw_count(uint8_t *blk, int passed, int k) {
    uint32_t total = blk[BLK_TOTAL] | blk[BLK_TOTAL + 1] << 8 | blk[BLK_TOTAL + 2] << 16
        | (uint32_t)blk[BLK_TOTAL + 3] << 24;
    total += passed;
    for (int b = 0; b < 4; b++) {
        blk[BLK_TOTAL + b] = total >> 8 * b & 0xFF;
    }
    blk[BLK_K] = k & 0xFF;
    blk[BLK_K + 1] = k >> 8 & 0xFF;
}

// forward.cut: the read d[i:n], span = n | i << 12 (| FROM_DOWN), as far as the block
// lets it go -> the frames handled when the whole read is done, else -1 - (i | j << 12)
// with i where it stopped and j that run's delimiter (0xFFF: none in the read)
static int32_t fw_cut(const uint8_t *d, uint8_t *blk, uint32_t span) {
    int n = span & 0xFFF;
    int i = span >> 12 & 0xFFF;
    int down = span >> 24;
    int k = 0;
    int passed = 0;
    while (i < n && !blk[BLK_CARRY + down]) {
        int j = fw_find0(d, i, n);
        if (j == i) {   // an empty run: skipped
            i++;
            continue;
        }
        if (j < 0 || j - i > MAX_WIRE || j - i < 4 || !fw_frame(d, i, j, blk, down, &passed)) {
            break;
        }
        k++;
        i = j + 1;
    }
    fw_count(blk, passed, k);
    if (i == n && !blk[BLK_CARRY + down]) {
        return k;
    }
    int j = fw_find0(d, i, n);
    return -1 - (i | (j < 0 ? 0xFFF : j) << 12);
}

#endif
