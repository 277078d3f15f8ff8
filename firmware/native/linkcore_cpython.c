// linkcore for CPython: the same core (linkcore_core.h) as the boards' native .mpy
// (linkcore.c), as a CPython extension module with the same functions, so that the
// desktop's in-process agents (firmware/agent.py under CPython) run their hot frames and
// float work in C too. In double, as CPython's float: their frames are byte-identical to
// the pure-Python firmware's (tests/test_linkcore_cpython.py). Built by `make setup`
// (host/tools/linkcore_ext.py) with -ffp-contract=off; without it the agents run pure Python.
// LINKTEAM_PURE_PYTHON=1 in the environment makes `import linkcore` fail, so a process
// runs the pure-Python firmware (its oracle) while the module stays installed.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

typedef double real;
#define R(x) (x)

#include "linkcore_core.h"
#include "linkcore_forward.h"
#include "linkcore_mac.h"

// x ** 0.5 as CPython computes it (float_pow: the C library's pow for a finite x >= 0,
// which is not always the correctly rounded sqrt)
static real root(real x) {
    return pow(x, 0.5);
}

// math.cos and math.sin as CPython's (the C library's cos and sin; host/tools/linkcore_ext.py
// builds with -fno-builtin-cos -fno-builtin-sin, so that no pair becomes one sincos call)
static real cos_r(real x) {
    return cos(x);
}

static real sin_r(real x) {
    return sin(x);
}

// a writable buffer of at least `need` bytes, held in *view (PyBuffer_Release after)
static void *buffer(PyObject *obj, Py_buffer *view, Py_ssize_t need, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE) < 0) {
        return NULL;
    }
    if (view->len < need) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "linkcore: %s too short", what);
        return NULL;
    }
    return view->buf;
}

static void release2(Py_buffer *a, Py_buffer *b) {
    PyBuffer_Release(a);
    PyBuffer_Release(b);
}

static int args_ok(Py_ssize_t nargs, Py_ssize_t want, const char *name) {
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "linkcore.%s takes %zd arguments (%zd given)", name, want, nargs);
        return 0;
    }
    return 1;
}


// a writable array('i') of at least n items (I: INTS, safety's N: NS), held in *view
static int32_t *int_array(PyObject *obj, Py_buffer *view, Py_ssize_t n, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
        return NULL;
    }
    if (view->len < n * (Py_ssize_t)sizeof(int32_t) || view->itemsize != 4 || view->format == NULL
            || strcmp(view->format, "i") != 0) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "linkcore: %s is not an array('i') of %zd", what, n);
        return NULL;
    }
    return view->buf;
}

// I, the agent's integers
static int32_t *ints(PyObject *obj, Py_buffer *view) {
    return int_array(obj, view, INTS, "I");
}

// S and I from args[0], args[1] (released with release2 after), or NULL
static real *state_ints(PyObject *const *args, Py_buffer *sb, Py_buffer *ib, int32_t **I) {
    real *S = buffer(args[0], sb, SLOTS * sizeof(real), "state array");
    if (S == NULL) {
        return NULL;
    }
    *I = ints(args[1], ib);
    if (*I == NULL) {
        PyBuffer_Release(sb);
        return NULL;
    }
    return S;
}

// S, I and a frame buffer of `need` bytes (released with release3 after), or NULL
static real *state_ints_frame(PyObject *const *args, Py_ssize_t need, Py_buffer *sb, Py_buffer *ib,
    Py_buffer *tb, int32_t **I, uint8_t **tx) {
    real *S = state_ints(args, sb, ib, I);
    if (S == NULL) {
        return NULL;
    }
    *tx = buffer(args[2], tb, need, "frame buffer");
    if (*tx == NULL) {
        release2(sb, ib);
        return NULL;
    }
    return S;
}

static void release3(Py_buffer *a, Py_buffer *b, Py_buffer *c) {
    release2(a, b);
    PyBuffer_Release(c);
}

// rx(frame, n, S, I, tx, state, blk, N, V) -> what became of a hot frame, or 0 (linkcore.c's rx)
static PyObject *rx(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!args_ok(nargs, 9, "rx")) {
        return NULL;
    }
    Py_buffer fb, sb, ib, tb, nb, vb;
    if (PyObject_GetBuffer(args[0], &fb, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    Py_ssize_t n = args[1] == Py_None ? fb.len : PyLong_AsSsize_t(args[1]);
    long state = PyLong_AsLong(args[5]);
    int32_t *I = PyErr_Occurred() ? NULL : ints(args[3], &ib);
    if (I == NULL) {
        PyBuffer_Release(&fb);
        return NULL;
    }
    int t = 0;
    if (n <= fb.len && n >= 0) {
        t = rx_check(fb.buf, n, I);
    }
    if (t != 0) {
        real *S = buffer(args[2], &sb, SLOTS * sizeof(real), "state array");
        uint8_t *tx = S == NULL ? NULL : buffer(args[4], &tb, TX_FRAMES, "frame buffer");
        int32_t *N = tx == NULL ? NULL : int_array(args[7], &nb, NS, "safety's N");
        real *V = N == NULL ? NULL : buffer(args[8], &vb, VS * sizeof(real), "safety's V");
        Py_buffer wb;   // the node's block (wire_out), or None
        uint8_t *blk = V == NULL || args[6] == Py_None ? NULL : buffer(args[6], &wb, BLK, "node block");
        bool got = V != NULL && (blk != NULL || args[6] == Py_None);   // every buffer (else an error is set)
        if (got) {
            t = rx_take(t, (const uint8_t *)fb.buf + HEADER, S, I + I_RX) ? rx_act(t, S, I, tx, blk, state, N, V) : 0;
        }
        Py_buffer *held[5] = {blk ? &wb : NULL, V ? &vb : NULL, N ? &nb : NULL, tx ? &tb : NULL, S ? &sb : NULL};
        for (int j = 0; j < 5; j++) {
            if (held[j] != NULL) {
                PyBuffer_Release(held[j]);
            }
        }
        if (!got) {
            release2(&fb, &ib);
            return NULL;
        }
    }
    release2(&fb, &ib);
    return PyLong_FromLong(t);
}

// fn(S, I, q, qd) for a call (S, I, q, qd) from Python
static PyObject *on_joint(PyObject *const *args, Py_ssize_t nargs, const char *name,
                          void (*fn)(real *, const int32_t *, real, real)) {
    if (!args_ok(nargs, 4, name)) {
        return NULL;
    }
    real q = PyFloat_AsDouble(args[2]);
    real qd = PyFloat_AsDouble(args[3]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer sb, ib;
    int32_t *I;
    real *S = state_ints(args, &sb, &ib, &I);
    if (S == NULL) {
        return NULL;
    }
    fn(S, I, q, qd);
    release2(&sb, &ib);
    Py_RETURN_NONE;
}

static void a_i_of(real *S, const int32_t *I, real q, real qd) {
    dh_local(S, I[I_FLAGS] & FLAG_REV, S[S_THETA], q, qd);
}

// a_i(S, I, q, qd): A_i(q) into S_ROT, S_TRANS (theta from S_THETA); q, qd into S_Q, S_QD
static PyObject *a_i(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return on_joint(args, nargs, "a_i", a_i_of);
}

// bridge(S, I, q, qd): K_{i-1} from K_{i-2} over neighbour i-1's joint into S_IN (nb_bridge)
static PyObject *bridge(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return on_joint(args, nargs, "bridge", nb_bridge);
}

// sample(S, I, N, V) -> the sync's plain sample done (linkcore.c's sample)
static PyObject *sample_fun(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!args_ok(nargs, 4, "sample")) {
        return NULL;
    }
    Py_buffer sb, ib, nb, vb;
    int32_t *I;
    real *S = state_ints(args, &sb, &ib, &I);
    if (S == NULL) {
        return NULL;
    }
    int32_t *N = int_array(args[2], &nb, NS, "safety's N");
    if (N == NULL) {
        release2(&sb, &ib);
        return NULL;
    }
    real *V = buffer(args[3], &vb, VS * sizeof(real), "safety's V");
    if (V == NULL) {
        release3(&sb, &ib, &nb);
        return NULL;
    }
    bool done = sample(S, I, N, V);
    release3(&sb, &ib, &nb);
    PyBuffer_Release(&vb);
    return PyBool_FromLong(done);
}

// kinematic(S, I, tx): K_i and its frames in tx (TX_FRAMES bytes: kinematic_i)
static PyObject *kinematic(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!args_ok(nargs, 3, "kinematic")) {
        return NULL;
    }
    Py_buffer sb, ib, tb;
    int32_t *I;
    uint8_t *tx;
    real *S = state_ints_frame(args, TX_FRAMES, &sb, &ib, &tb, &I, &tx);
    if (S == NULL) {
        return NULL;
    }
    kinematic_i(S, I, tx);
    release3(&sb, &ib, &tb);
    Py_RETURN_NONE;
}

// torque(S, I, tx, goal, q, qd, state) -> finite: the components into S_C, u into S_U,
// and the TORQUE frame (TORQUE_FRAME bytes) in tx (torque_i)
static PyObject *torque_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!args_ok(nargs, 7, "torque")) {
        return NULL;
    }
    int goal = PyObject_IsTrue(args[3]);
    real q = PyFloat_AsDouble(args[4]);
    real qd = PyFloat_AsDouble(args[5]);
    long state = PyLong_AsLong(args[6]);
    if (goal < 0 || PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer sb, ib, tb;
    int32_t *I;
    uint8_t *tx;
    real *S = state_ints_frame(args, TORQUE_FRAME, &sb, &ib, &tb, &I, &tx);
    if (S == NULL) {
        return NULL;
    }
    if (I[I_NA] < 0 || I[I_NA] > MAX_ASSERT) {
        release3(&sb, &ib, &tb);
        PyErr_SetString(PyExc_ValueError, "linkcore: n_assert out of range");
        return NULL;
    }
    bool finite = torque_i(S, I, tx, goal, q, qd, state);
    release3(&sb, &ib, &tb);
    return PyBool_FromLong(finite);
}

// ---- the MAC of protected frames (linkcore_mac.h; linkcore.c's mac_key, mac, mac_check, strip) ----

// obj's buffer (writable if `rw`) in *view, at least `need` bytes; n: its first *n bytes
// (None: all), checked against its length; NULL with an error set
static uint8_t *bytes_of(PyObject *obj, Py_buffer *view, int rw, PyObject *n_obj, Py_ssize_t *n, Py_ssize_t need) {
    if (PyObject_GetBuffer(obj, view, rw ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    Py_ssize_t k = view->len;
    if (n_obj != NULL && n_obj != Py_None) {
        k = PyLong_AsSsize_t(n_obj);
        if (k == -1 && PyErr_Occurred()) {
            PyBuffer_Release(view);
            return NULL;
        }
    }
    if (k < 0 || k > view->len || view->len < need) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "linkcore: buffer too short");
        return NULL;
    }
    if (n != NULL) {
        *n = k;
    }
    return view->buf;
}

// mac_key(key, ks): the key's padded states into ks (MAC_STATES bytes)
static PyObject *mac_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer kb, sb;
    Py_ssize_t len;
    if (!args_ok(nargs, 2, "mac_key") || bytes_of(args[0], &kb, 0, NULL, &len, 0) == NULL) {
        return NULL;
    }
    uint8_t *ks = bytes_of(args[1], &sb, 1, NULL, NULL, MAC_STATES);
    if (ks != NULL) {
        mac_key_states(ks, kb.buf, len);
        PyBuffer_Release(&sb);
    }
    PyBuffer_Release(&kb);
    return ks == NULL ? NULL : Py_NewRef(Py_None);
}

// the FV's high 32 bits from a Python int (truncated), or -1 with an error set
static int fv_high(PyObject *obj, uint8_t *hi) {
    unsigned long v = PyLong_AsUnsignedLongMask(obj);
    if (v == (unsigned long)-1 && PyErr_Occurred()) {
        return -1;
    }
    put_u32(hi, (uint32_t)v);
    return 0;
}

// mac(ks, data, n, fv_hi, out): HMAC-SHA256 of data[:n] ‖ fv_hi as u32 LE (None: nothing) into out
static PyObject *mac(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    uint8_t hi[4];
    if (!args_ok(nargs, 5, "mac") || (args[3] != Py_None && fv_high(args[3], hi) < 0)) {
        return NULL;
    }
    Py_buffer kb, db, ob;
    Py_ssize_t n;
    uint8_t *ks = bytes_of(args[0], &kb, 0, NULL, NULL, MAC_STATES);
    uint8_t *d = ks == NULL ? NULL : bytes_of(args[1], &db, 0, args[2], &n, 0);
    uint8_t *out = d == NULL ? NULL : bytes_of(args[4], &ob, 1, NULL, NULL, 32);
    if (out != NULL) {
        mac_sum(ks, d, n, hi, args[3] == Py_None ? 0 : 4, out);
        PyBuffer_Release(&ob);
    }
    if (d != NULL) {
        PyBuffer_Release(&db);
    }
    if (ks != NULL) {
        PyBuffer_Release(&kb);
    }
    return out == NULL ? NULL : Py_NewRef(Py_None);
}

// mac_check(ks, frame, n, fv_hi) -> the protected frame[:n]'s MAC checks with fv_hi
static PyObject *mac_check_fun(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    uint8_t hi[4];
    if (!args_ok(nargs, 4, "mac_check") || fv_high(args[3], hi) < 0) {
        return NULL;
    }
    Py_buffer kb, fb;
    Py_ssize_t n;
    uint8_t *ks = bytes_of(args[0], &kb, 0, NULL, NULL, MAC_STATES);
    uint8_t *f = ks == NULL ? NULL : bytes_of(args[1], &fb, 0, args[2], &n, 0);
    if (f == NULL) {
        if (ks != NULL) {
            PyBuffer_Release(&kb);
        }
        return NULL;
    }
    bool ok = mac_check(ks, f, n, get_u32(hi));
    release2(&kb, &fb);
    return PyBool_FromLong(ok);
}

// strip(frame, n, out) -> the plain frame of the protected frame[:n] in out, its length
static PyObject *strip(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!args_ok(nargs, 3, "strip")) {
        return NULL;
    }
    Py_buffer fb, ob;
    Py_ssize_t n;
    uint8_t *f = bytes_of(args[0], &fb, 0, args[1], &n, HEADER + AUTH_TRAILER + 2);
    if (f == NULL) {
        return NULL;
    }
    if (n < HEADER + AUTH_TRAILER + 2) {
        PyBuffer_Release(&fb);
        PyErr_SetString(PyExc_ValueError, "linkcore: no trailer");
        return NULL;
    }
    uint8_t *out = bytes_of(args[2], &ob, 1, NULL, NULL, n - AUTH_TRAILER);
    if (out == NULL) {
        PyBuffer_Release(&fb);
        return NULL;
    }
    size_t k = mac_strip(f, n, out);
    release2(&fb, &ob);
    return PyLong_FromSize_t(k);
}

// cut(data, blk, span) -> the node's forwarder (linkcore_forward.h fw_cut: forward.cut)
static PyObject *cut(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!args_ok(nargs, 3, "cut")) {
        return NULL;
    }
    long span = PyLong_AsLong(args[2]);
    if (span == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer db, bb;
    if (PyObject_GetBuffer(args[0], &db, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    uint8_t *blk = buffer(args[1], &bb, BLK, "node block");
    if (blk == NULL) {
        PyBuffer_Release(&db);
        return NULL;
    }
    long r = 0;
    if (span < 0 || span >> 25 || (span & 0xFFF) > db.len) {
        PyErr_SetString(PyExc_ValueError, "linkcore: span beyond the read");
    } else {
        r = fw_cut(db.buf, blk, span);
    }
    release2(&db, &bb);
    return PyErr_Occurred() ? NULL : PyLong_FromLong(r);
}

static PyMethodDef methods[] = {
    {"rx", (PyCFunction)(void (*)(void))rx, METH_FASTCALL, "a hot frame into S: its type, or 0"},
    {"a_i", (PyCFunction)(void (*)(void))a_i, METH_FASTCALL, "A_i(q) into S"},
    {"bridge", (PyCFunction)(void (*)(void))bridge, METH_FASTCALL, "K_{i-1} over neighbour i-1 into S"},
    {"sample", (PyCFunction)(void (*)(void))sample_fun, METH_FASTCALL, "the sync's plain sample"},
    {"kinematic", (PyCFunction)(void (*)(void))kinematic, METH_FASTCALL, "K_i and its frame"},
    {"torque", (PyCFunction)(void (*)(void))torque_frame, METH_FASTCALL, "the torque and its frame"},
    {"cut", (PyCFunction)(void (*)(void))cut, METH_FASTCALL, "the node's cut-through forwarder"},
    {"mac_key", (PyCFunction)(void (*)(void))mac_key, METH_FASTCALL, "a key's padded HMAC states"},
    {"mac", (PyCFunction)(void (*)(void))mac, METH_FASTCALL, "HMAC-SHA256 of data and the FV's high bits"},
    {"mac_check", (PyCFunction)(void (*)(void))mac_check_fun, METH_FASTCALL, "a protected frame's MAC checks"},
    {"strip", (PyCFunction)(void (*)(void))strip, METH_FASTCALL, "a protected frame's plain frame"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "linkcore", NULL, -1, methods};

PyMODINIT_FUNC PyInit_linkcore(void) {
    const char *pure = getenv("LINKTEAM_PURE_PYTHON");
    if (pure != NULL && pure[0] != '\0' && strcmp(pure, "0") != 0) {
        PyErr_SetString(PyExc_ImportError, "linkcore: LINKTEAM_PURE_PYTHON is set");
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    // the layout's size and the float width, checked by firmware/linkstate.py
    if (PyModule_AddIntConstant(m, "LAYOUT_ID", LAYOUT_ID) < 0
        || PyModule_AddIntConstant(m, "FLOAT_BYTES", sizeof(real)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
