// linkcore: a link agent's per-cycle floating-point work and its hot frames in C
// (linkcore_core.h), built as a native .mpy module (MicroPython's py/dynruntime.mk:
// firmware/native/Makefile); this file is its MicroPython glue. linkcore_cpython.c is the
// same core as a CPython extension module, for the desktop's in-process agents.
// The pure-Python firmware (firmware/kinematic_bus.py, global_proxy.py, behaviours.py,
// bus_protocol/messages.py) stays the portable fallback and the oracle.
// firmware/linkstate.py is the Python side (glue); the layouts are firmware/layout.py's
// (linkcore_layout.h, written by `make layouts`).
//
// Why: on a Cortex-M4F the MicroPython VM spends ~420 instructions and 16 bytes of heap
// on one float operation and ~380 on a call (benchmarks/README.md); the ~150 float operations
// of a cycle cost ~50k there and ~150 instructions here.
//
// The agent's state is one array of floats S (MicroPython's float: float32 on the
// boards, double on the unix port) in the layout of firmware/layout.py.
#ifdef MICROPY_ENABLE_DYNRUNTIME
#include "py/dynruntime.h"
#else   // compiled into the firmware (a user C module: host/tools/mcu.py usermod)
#include "py/runtime.h"
#endif

typedef mp_float_t real;
#define R(x) MICROPY_FLOAT_CONST(x)

#include "linkcore_core.h"
#include "linkcore_forward.h"
#include "linkcore_mac.h"

// x ** 0.5 as the Python does it. MicroPython's float power is powf on the boards,
// whose y == 0.5 case is sqrtf (lib/libm/math.c), exact on any IEEE machine; in double
// it is the C library's pow, which is not always the correctly rounded sqrt: that one is
// called through the runtime (the unix port's pow is CPython's).
#if MICROPY_FLOAT_IMPL == MICROPY_FLOAT_IMPL_FLOAT && !defined(__ARM_FP)
// no FPU (Cortex-M0+): sqrtf bit by bit, as MicroPython's lib/libm/ef_sqrt.c (fdlibm) does
// on such a board, correctly rounded; x is a sum of squares (>= +0, or +inf)
static float sqrt_soft(float x) {
    f32 v;
    v.f = x;
    int32_t ix = v.u;
    if (ix == 0 || ix >= 0x7f800000) {
        return x;
    }
    int32_t m = ix >> 23;
    if (m == 0) {   // subnormal
        int32_t i;
        for (i = 0; (ix & 0x00800000) == 0; i++) {
            ix <<= 1;
        }
        m -= i - 1;
    }
    m -= 127;
    ix = (ix & 0x007fffff) | 0x00800000;
    if (m & 1) {
        ix += ix;
    }
    m >>= 1;
    ix += ix;
    int32_t q = 0, s = 0;
    for (uint32_t r = 0x01000000; r != 0; r >>= 1) {
        int32_t t = s + r;
        if (t <= ix) {
            s = t + r;
            ix -= t;
            q += r;
        }
        ix += ix;
    }
    if (ix != 0) {   // round to nearest
        q += q & 1;
    }
    v.u = (q >> 1) + 0x3f000000 + (m << 23);
    return v.f;
}
#endif

static real root(real x) {
    #if MICROPY_FLOAT_IMPL == MICROPY_FLOAT_IMPL_FLOAT && defined(__ARM_FP)
    return __builtin_sqrtf(x);   // vsqrt.f32, as the firmware's sqrtf on an FPU
    #elif MICROPY_FLOAT_IMPL == MICROPY_FLOAT_IMPL_FLOAT
    return sqrt_soft(x);
    #else
    return mp_obj_get_float(mp_binary_op(MP_BINARY_OP_POWER, mp_obj_new_float(x), mp_obj_new_float(R(0.5))));
    #endif
}

// math.cos and math.sin through the runtime: the interpreter's own functions, bit for bit
// (a float object each call)
static real math_call(qstr fun, real x) {
    mp_obj_t math = mp_import_name(MP_QSTR_math, mp_const_none, MP_OBJ_NEW_SMALL_INT(0));
    mp_obj_t arg = mp_obj_new_float(x);
    return mp_obj_get_float(mp_call_function_n_kw(mp_load_attr(math, fun), 1, 0, &arg));
}

// math.cos and math.sin. On the boards (float32) MicroPython's own lib/libm cosf and
// sinf, compiled into this module as the firmware compiles them (firmware/native/
// Makefile): the same code, so the same bits, and no float object per call. Their
// reduction of a finite |x| > 2^7 pi/2 (fdlibm's __kernel_rem_pio2f: code and tables
// loaded into RAM with the module, benchmarks/README.md) is left out: such an angle goes to the
// runtime's, which is the same function. In double (the unix port) the port's own math
// functions, through the runtime.
#if MICROPY_FLOAT_IMPL == MICROPY_FLOAT_IMPL_FLOAT
float cosf(float x);
float sinf(float x);

// a finite |x| beyond fdlibm's medium reduction (lib/libm/ef_rem_pio2.c: ix > 0x43490f80)
static bool trig_far(real x) {
    f32 v;
    v.f = x;
    uint32_t ix = v.u & 0x7fffffff;
    return ix > 0x43490f80 && ix < 0x7f800000;
}

static real cos_r(real x) {
    return trig_far(x) ? math_call(MP_QSTR_cos, x) : cosf(x);
}

static real sin_r(real x) {
    return trig_far(x) ? math_call(MP_QSTR_sin, x) : sinf(x);
}

#ifdef MICROPY_ENABLE_DYNRUNTIME
// lib/libm/ef_rem_pio2.c's call for a large argument, never made (trig_far): present so
// that the link takes no reduction from the toolchain's C library (in the firmware: its own)
int __kernel_rem_pio2f(float *x, float *y, int e0, int nx, int prec, const uint8_t *ipio2) {
    mp_raise_msg(&mp_type_RuntimeError, MP_ERROR_TEXT("linkcore: large-argument reduction"));
}
#endif
#else
static real cos_r(real x) {
    return math_call(MP_QSTR_cos, x);
}

static real sin_r(real x) {
    return math_call(MP_QSTR_sin, x);
}
#endif

// ---- MicroPython glue ----

// a writable array of at least n floats (S: SLOTS, safety's V: VS), else `bad`
static real *floats(mp_obj_t obj, size_t n, mp_rom_error_text_t bad) {
    mp_buffer_info_t b;
    mp_get_buffer_raise(obj, &b, MP_BUFFER_RW);
    if (b.len < n * sizeof(real)) {
        mp_raise_ValueError(bad);
    }
    return (real *)b.buf;
}

static real *state(mp_obj_t obj) {
    return floats(obj, SLOTS, MP_ERROR_TEXT("linkcore: state array too short"));
}

static uint8_t *frame_buffer(mp_obj_t obj, size_t need) {
    mp_buffer_info_t b;
    mp_get_buffer_raise(obj, &b, MP_BUFFER_RW);
    if (b.len < need) {
        mp_raise_ValueError(MP_ERROR_TEXT("linkcore: frame buffer too short"));
    }
    return (uint8_t *)b.buf;
}

// a writable array('i') of at least n items (I: INTS, safety's N: NS), else `bad`
static int32_t *int_array(mp_obj_t obj, size_t n, mp_rom_error_text_t bad) {
    mp_buffer_info_t b;
    mp_get_buffer_raise(obj, &b, MP_BUFFER_RW);
    if (b.len < n * sizeof(int32_t) || b.typecode != 'i') {
        mp_raise_ValueError(bad);
    }
    return (int32_t *)b.buf;
}

static int32_t *ints(mp_obj_t obj) {
    return int_array(obj, INTS, MP_ERROR_TEXT("linkcore: I is not an array('i') of INTS"));
}

// safety's per-sample state: N, an array('i') of NS, and V, VS floats like S
static int32_t *safety_ints(mp_obj_t obj) {
    return int_array(obj, NS, MP_ERROR_TEXT("linkcore: safety's N is not an array('i') of NS"));
}

static real *safety_floats(mp_obj_t obj) {
    return floats(obj, VS, MP_ERROR_TEXT("linkcore: safety's V too short"));
}

// the node's block (framing.BLK bytes: its transmit buffers, wire_out), or NULL for None
static uint8_t *wire(mp_obj_t obj) {
    if (obj == mp_const_none) {
        return NULL;
    }
    mp_buffer_info_t b;
    mp_get_buffer_raise(obj, &b, MP_BUFFER_RW);
    if (b.len < BLK) {
        mp_raise_ValueError(MP_ERROR_TEXT("linkcore: node block too short"));
    }
    return (uint8_t *)b.buf;
}

// rx(frame, n, S, I, tx, state, blk, N, V) -> what became of a hot frame, or 0. A frame is checked
// as messages.Decoder checks it (rx_check) and taken if it is
//   SYNC (broadcast or to the link): its tick into I_RX;
//   JOINT_STATE to the link, all finite: its tick, flags into I_RX, q, qd, p_psh, x_r into S_JOINT;
//   KINEMATIC to the link of this tick, all finite: K_{i-1} into S_IN;
//   GOAL (broadcast) of this tick, all finite: p_app and f into S_GOAL;
// and acted on at once where it can be (rx_act: K_SENT, GOAL_ACTED; tx is TX_FRAMES bytes; blk
// the node's block, its frames queued there, or None; N, V safety's per-sample state).
// Their floats go straight from the frame into S: no Python float is made. Anything
// else returns 0, and the agent decodes it in Python (which also counts a bad frame).
static mp_obj_t rx(size_t n_args, const mp_obj_t *args) {
    mp_buffer_info_t b;
    mp_get_buffer_raise(args[0], &b, MP_BUFFER_READ);
    size_t n = args[1] == mp_const_none ? b.len : (size_t)mp_obj_get_int(args[1]);
    if (n > b.len) {
        return MP_OBJ_NEW_SMALL_INT(0);
    }
    int32_t *I = ints(args[3]);
    int t = rx_check(b.buf, n, I);
    if (t == 0) {
        return MP_OBJ_NEW_SMALL_INT(0);
    }
    real *S = state(args[2]);
    if (!rx_take(t, (const uint8_t *)b.buf + HEADER, S, I + I_RX)) {
        return MP_OBJ_NEW_SMALL_INT(0);
    }
    return MP_OBJ_NEW_SMALL_INT(rx_act(t, S, I, frame_buffer(args[4], TX_FRAMES), wire(args[6]), mp_obj_get_int(args[5]),
        safety_ints(args[7]), safety_floats(args[8])));
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(rx_obj, 9, rx);

// a_i(S, I, q, qd): A_i(q) into S_ROT, S_TRANS (theta from S_THETA); q, qd into S_Q, S_QD
static mp_obj_t a_i(size_t n_args, const mp_obj_t *args) {
    real *S = state(args[0]);
    dh_local(S, ints(args[1])[I_FLAGS] & FLAG_REV, S[S_THETA], mp_obj_get_float(args[2]),
        mp_obj_get_float(args[3]));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(a_i_obj, 4, a_i);

// bridge(S, I, q, qd): K_{i-1} composed from K_{i-2} (S_NB_IN) over neighbour i-1's
// joint (q, qd) into S_IN (nb_bridge)
static mp_obj_t bridge(size_t n_args, const mp_obj_t *args) {
    nb_bridge(state(args[0]), ints(args[1]), mp_obj_get_float(args[2]), mp_obj_get_float(args[3]));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(bridge_obj, 4, bridge);

// sample(S, I, N, V) -> the sync's plain sample done (sample in linkcore_core.h; N and V
// are safety's per-sample state, an array('i') of NS and an array of VS floats like S)
static mp_obj_t sample_obj_fun(size_t n_args, const mp_obj_t *args) {
    return mp_obj_new_bool(sample(state(args[0]), ints(args[1]), safety_ints(args[2]), safety_floats(args[3])));
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(sample_obj, 4, sample_obj_fun);

// kinematic(S, I, tx): K_i and its frames in tx (TX_FRAMES bytes: kinematic_i)
static mp_obj_t kinematic(mp_obj_t S, mp_obj_t I, mp_obj_t tx) {
    kinematic_i(state(S), ints(I), frame_buffer(tx, TX_FRAMES));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_3(kinematic_obj, kinematic);

// torque(S, I, tx, goal, q, qd, state) -> finite: the components into S_C, u into S_U,
// and the TORQUE frame (TORQUE_FRAME bytes, to the host) in tx, reporting `state` (torque_i)
static mp_obj_t torque_frame(size_t n_args, const mp_obj_t *args) {
    int32_t *I = ints(args[1]);
    if (I[I_NA] < 0 || I[I_NA] > MAX_ASSERT) {
        mp_raise_ValueError(MP_ERROR_TEXT("linkcore: n_assert out of range"));
    }
    return mp_obj_new_bool(torque_i(state(args[0]), I, frame_buffer(args[2], TORQUE_FRAME), mp_obj_is_true(args[3]),
        mp_obj_get_float(args[4]), mp_obj_get_float(args[5]), mp_obj_get_int(args[6])));
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(torque_obj, 7, torque_frame);

// ---- the MAC of protected frames (linkcore_mac.h) ----

static const uint8_t *read_buffer(mp_obj_t obj, size_t need) {
    mp_buffer_info_t b;
    mp_get_buffer_raise(obj, &b, MP_BUFFER_READ);
    if (b.len < need) {
        mp_raise_ValueError(MP_ERROR_TEXT("linkcore: buffer too short"));
    }
    return (const uint8_t *)b.buf;
}

// n of obj's bytes (None: all of them)
static size_t count(mp_obj_t obj, mp_obj_t n) {
    mp_buffer_info_t b;
    mp_get_buffer_raise(obj, &b, MP_BUFFER_READ);
    return n == mp_const_none ? b.len : (size_t)mp_obj_get_int(n);
}

// mac_key(key, ks): the key's padded states into ks (MAC_STATES bytes), once per key
static mp_obj_t mac_key(mp_obj_t key, mp_obj_t ks) {
    mp_buffer_info_t b;
    mp_get_buffer_raise(key, &b, MP_BUFFER_READ);
    mac_key_states(frame_buffer(ks, MAC_STATES), b.buf, b.len);
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_2(mac_key_obj, mac_key);

// mac(ks, data, n, fv_hi, out): HMAC-SHA256 of data[:n] (n None: all) ‖ fv_hi as u32 LE
// (None: nothing) into out (32 bytes)
static mp_obj_t mac(size_t n_args, const mp_obj_t *args) {
    size_t n = count(args[1], args[2]);
    uint8_t hi[4];
    if (args[3] != mp_const_none) {
        put_u32(hi, mp_obj_get_int_truncated(args[3]));
    }
    mac_sum(read_buffer(args[0], MAC_STATES), read_buffer(args[1], n), n, hi, args[3] == mp_const_none ? 0 : 4,
        frame_buffer(args[4], 32));
    return mp_const_none;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(mac_obj, 5, mac);

// mac_check(ks, frame, n, fv_hi) -> the protected frame[:n]'s MAC checks with fv_hi
static mp_obj_t mac_ok(size_t n_args, const mp_obj_t *args) {
    size_t n = count(args[1], args[2]);
    return mp_obj_new_bool(mac_check(read_buffer(args[0], MAC_STATES), read_buffer(args[1], n), n,
        mp_obj_get_int_truncated(args[3])));
}
static MP_DEFINE_CONST_FUN_OBJ_VAR(mac_check_obj, 4, mac_ok);

// strip(frame, n, out) -> the plain frame of the protected frame[:n] in out, its length
static mp_obj_t strip(mp_obj_t frame, mp_obj_t n_obj, mp_obj_t out) {
    size_t n = count(frame, n_obj);
    if (n < HEADER + AUTH_TRAILER + 2) {
        mp_raise_ValueError(MP_ERROR_TEXT("linkcore: no trailer"));
    }
    const uint8_t *f = read_buffer(frame, n);
    return MP_OBJ_NEW_SMALL_INT(mac_strip(f, n, frame_buffer(out, n - AUTH_TRAILER)));
}
static MP_DEFINE_CONST_FUN_OBJ_3(strip_obj, strip);

// cut(data, blk, span) -> the node's forwarder (linkcore_forward.h fw_cut: forward.cut)
static mp_obj_t cut(mp_obj_t data, mp_obj_t blk, mp_obj_t span_obj) {
    mp_buffer_info_t b;
    mp_get_buffer_raise(data, &b, MP_BUFFER_READ);
    mp_int_t span = mp_obj_is_small_int(span_obj) ? MP_OBJ_SMALL_INT_VALUE(span_obj) : mp_obj_get_int(span_obj);
    if (span < 0 || span >> 25 || (size_t)(span & 0xFFF) > b.len) {
        mp_raise_ValueError(MP_ERROR_TEXT("linkcore: span beyond the read"));
    }
    return MP_OBJ_NEW_SMALL_INT(fw_cut(b.buf, frame_buffer(blk, BLK), span));
}
static MP_DEFINE_CONST_FUN_OBJ_3(cut_obj, cut);

// the module's names: its functions (their objects above), the layout's sizes and the float
// width (checked by firmware/linkstate.py)
#define LINKCORE_FUNCTIONS(F) F(MP_QSTR_rx, rx_obj) F(MP_QSTR_a_i, a_i_obj) F(MP_QSTR_sample, sample_obj) \
    F(MP_QSTR_kinematic, kinematic_obj) F(MP_QSTR_torque, torque_obj) F(MP_QSTR_bridge, bridge_obj) \
    F(MP_QSTR_cut, cut_obj) F(MP_QSTR_mac_key, mac_key_obj) \
    F(MP_QSTR_mac, mac_obj) F(MP_QSTR_mac_check, mac_check_obj) F(MP_QSTR_strip, strip_obj)

#ifdef MICROPY_ENABLE_DYNRUNTIME
#define STORE(qst, obj) mp_store_global(qst, MP_OBJ_FROM_PTR(&obj));
mp_obj_t mpy_init(mp_obj_fun_bc_t *self, size_t n_args, size_t n_kw, mp_obj_t *args) {
    MP_DYNRUNTIME_INIT_ENTRY
    LINKCORE_FUNCTIONS(STORE)
    mp_store_global(MP_QSTR_LAYOUT_ID, MP_OBJ_NEW_SMALL_INT(LAYOUT_ID));
    mp_store_global(MP_QSTR_FLOAT_BYTES, MP_OBJ_NEW_SMALL_INT(sizeof(real)));
    MP_DYNRUNTIME_INIT_EXIT
}
#else
// in the firmware image: its code and this table in flash. Extensible: a linkcore.mpy on
// sys.path (a board's filesystem) is imported in its place
#define ENTRY(qst, obj) {MP_ROM_QSTR(qst), MP_ROM_PTR(&obj)},
static const mp_rom_map_elem_t linkcore_globals_table[] = {
    {MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_linkcore)},
    LINKCORE_FUNCTIONS(ENTRY)
    {MP_ROM_QSTR(MP_QSTR_LAYOUT_ID), MP_ROM_INT(LAYOUT_ID)},
    {MP_ROM_QSTR(MP_QSTR_FLOAT_BYTES), MP_ROM_INT(sizeof(real))},
};
static MP_DEFINE_CONST_DICT(linkcore_globals, linkcore_globals_table);

const mp_obj_module_t linkcore_user_cmodule = {
    .base = {&mp_type_module},
    .globals = (mp_obj_dict_t *)&linkcore_globals,
};
MP_REGISTER_EXTENSIBLE_MODULE(MP_QSTR_linkcore, linkcore_user_cmodule);
#endif
