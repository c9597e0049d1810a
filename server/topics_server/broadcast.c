/* topics_server.broadcast — one frame to many sockets in one call (the live fan-out's fast
 * path, ``streams._PumpBatch``).
 *
 * send_all(fds, data) sends the same bytes to every socket of ``fds`` (a sequence of ints):
 * for each, send(fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL), retried on EINTR, with the GIL
 * released for the whole loop (no Python runs per subscriber). Returns a list with one int per
 * fd, in order: the bytes that socket took (0 .. len(data); 0 when it would block: EAGAIN /
 * EWOULDBLOCK), or -errno for any other error (-EPIPE, -ECONNRESET, -EBADF, ...).
 *
 * It never blocks, never raises SIGPIPE, and never retries a partial send: what a socket did
 * not take is the caller's to hand to the connection's transport (its buffering and flow
 * control take over). The caller guarantees each fd is a live socket of its own whose
 * transport holds no unsent bytes (so these bytes cannot overtake earlier ones).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/types.h>

static PyObject *send_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "send_all(fds, data) takes exactly 2 arguments");
        return NULL;
    }
    /* a tuple of the fds (a copy of a list): converting an item may run Python code
     * (``__index__``) that changes the caller's sequence; a tuple of our own stays as it is,
     * its items alive, while they are read */
    PyObject *seq = PySequence_Tuple(args[0]);
    if (!seq) return NULL;
    Py_buffer data;
    if (PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    PyObject *out = NULL;
    int *fds = PyMem_Malloc(sizeof(int) * (size_t)(n ? n : 1));
    Py_ssize_t *sent = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
    if (!fds || !sent) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long fd = PyLong_AsLong(PyTuple_GET_ITEM(seq, i));
        if (fd == -1 && PyErr_Occurred()) goto done;
        if (fd < 0 || fd > INT_MAX) {
            PyErr_Format(PyExc_ValueError, "send_all: %ld is not a file descriptor", fd);
            goto done;
        }
        fds[i] = (int)fd;
    }
    const char *buf = data.buf;
    size_t len = (size_t)data.len;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        ssize_t r;
        do {
            r = send(fds[i], buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        } while (r < 0 && errno == EINTR);
        if (r >= 0)
            sent[i] = (Py_ssize_t)r;
        else if (errno == EAGAIN || errno == EWOULDBLOCK)
            sent[i] = 0;
        else
            sent[i] = -(Py_ssize_t)errno;
    }
    Py_END_ALLOW_THREADS
    out = PyList_New(n);
    if (!out) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *count = PyLong_FromSsize_t(sent[i]);
        if (!count) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, count);
    }
done:
    PyMem_Free(fds);
    PyMem_Free(sent);
    PyBuffer_Release(&data);
    Py_DECREF(seq);
    return out;
}

static PyMethodDef methods[] = {
    {"send_all", (PyCFunction)(void (*)(void))send_all, METH_FASTCALL,
     "send_all(fds, data) -> list[int]: data sent to every socket without blocking; per fd the "
     "bytes it took (0 if it would block) or -errno"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "broadcast", "One frame to many sockets, the GIL released.", -1, methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_broadcast(void) { return PyModule_Create(&module); }
