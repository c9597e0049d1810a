/* topics_engine._codec — the record codec's hot loop in C.
 *
 * encode_records(first_seq, ts, datas, tags, nodes, metas, limits[, delays]) encodes a write's
 * records into their wire form in one pass over exact-size buffers:
 *
 *     {"$seq":S,"$ts":T[,"$delay_ms":D][,"$node":N][,"$tag":G],"data":D[,"meta":M]}   joined by ","
 *
 * datas/metas items are bytes-like JSON values (bytes, msgspec.Raw, memoryview) copied
 * verbatim; tags/nodes items are str (JSON-escaped like orjson: \" \\ \b \f \n \r \t, other
 * control characters as \u00XX, everything else as UTF-8). tags/nodes/metas may be None (no
 * record has one) or lists holding None for records without one. delays (optional; None: none)
 * is a list of ints, one per record: a record's "$delay_ms" key is written when its delay is
 * above 0 (a queue job's write delay, already clamped by the caller; it sits before "$node"
 * and "$tag", so a reader's cut of "$tag" keeps it).
 *
 * Returns (blob, ends, data_at, tag_at, meta_at): blob is bytes; ends (u32), data_at (u16),
 * tag_at (u16) and meta_at (u32) are native-order integer columns as bytes (tag_at/meta_at
 * None when the respective list is None). ends[i] is the exclusive end of record i in blob.
 *
 * limits = (max_record_bytes, max_meta_bytes, max_tag_bytes, max_node_bytes): data+meta and meta
 * in UTF-8 bytes, tag and node in characters (code points). The first record over a limit is
 * reported instead of encoded: the call returns (index, field, size, limit) with field one of "tag", "node", "meta", "record"
 * (checked in that order) — nothing is encoded then.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    Py_buffer data;
    Py_buffer meta;
    int has_meta;
    const char *tag;
    Py_ssize_t tag_len;
    Py_ssize_t tag_json;
    const char *node;
    Py_ssize_t node_len;
    Py_ssize_t node_json;
    long long delay;
} rec_t;

/* JSON-escaped length of a UTF-8 string (without quotes). */
static Py_ssize_t escaped_len(const char *s, Py_ssize_t n) {
    Py_ssize_t out = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
            out += 2;
        else if (c < 0x20)
            out += 6;
        else
            out += 1;
    }
    return out;
}

static char *write_escaped(char *p, const char *s, Py_ssize_t n) {
    static const char hex[] = "0123456789abcdef";
    *p++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': *p++ = '\\'; *p++ = '"'; break;
        case '\\': *p++ = '\\'; *p++ = '\\'; break;
        case '\b': *p++ = '\\'; *p++ = 'b'; break;
        case '\f': *p++ = '\\'; *p++ = 'f'; break;
        case '\n': *p++ = '\\'; *p++ = 'n'; break;
        case '\r': *p++ = '\\'; *p++ = 'r'; break;
        case '\t': *p++ = '\\'; *p++ = 't'; break;
        default:
            if (c < 0x20) {
                *p++ = '\\'; *p++ = 'u'; *p++ = '0'; *p++ = '0';
                *p++ = hex[c >> 4]; *p++ = hex[c & 15];
            } else {
                *p++ = (char)c;
            }
        }
    }
    *p++ = '"';
    return p;
}

static int u64_digits(uint64_t v) {
    int d = 1;
    while (v >= 10) { v /= 10; d++; }
    return d;
}

static char *write_u64(char *p, uint64_t v) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n) *p++ = tmp[--n];
    return p;
}

static int i64_len(int64_t v) {
    return v < 0 ? 1 + u64_digits((uint64_t)(-(v + 1)) + 1) : u64_digits((uint64_t)v);
}

static char *write_i64(char *p, int64_t v) {
    if (v < 0) { *p++ = '-'; return write_u64(p, (uint64_t)(-(v + 1)) + 1); }
    return write_u64(p, (uint64_t)v);
}

static const char K_SEQ[] = "{\"$seq\":";
static const char K_TS[] = ",\"$ts\":";
static const char K_DELAY[] = ",\"$delay_ms\":";
static const char K_NODE[] = ",\"$node\":";
static const char K_TAG[] = ",\"$tag\":";
static const char K_DATA[] = ",\"data\":";
static const char K_META[] = ",\"meta\":";
#define KLEN(k) ((Py_ssize_t)(sizeof(k) - 1))

static void release(rec_t *recs, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (recs[i].data.obj) PyBuffer_Release(&recs[i].data);
        if (recs[i].has_meta) PyBuffer_Release(&recs[i].meta);
    }
    PyMem_Free(recs);
}

/* The str item of an optional list, as UTF-8; 0 on success (NULL out for None), -1 on error. */
/* Item i of a list of str-or-None: its UTF-8 bytes and length, and its length in characters
 * (code points — what the tag/node limits count, as JSON Schema's maxLength does). */
static int optional_str(PyObject *list, Py_ssize_t i, const char **out, Py_ssize_t *len,
                        Py_ssize_t *chars) {
    *out = NULL;
    *len = 0;
    *chars = 0;
    if (list == Py_None) return 0;
    PyObject *item = PyList_GET_ITEM(list, i);
    if (item == Py_None) return 0;
    if (!PyUnicode_Check(item)) {
        PyErr_SetString(PyExc_TypeError, "tags and nodes must be str or None");
        return -1;
    }
    *chars = PyUnicode_GET_LENGTH(item);
    *out = PyUnicode_AsUTF8AndSize(item, len);
    return *out ? 0 : -1;
}

static PyObject *encode_records(PyObject *self, PyObject *args) {
    unsigned long long first_seq;
    long long ts;
    PyObject *datas, *tags, *nodes, *metas, *delays = Py_None;
    Py_ssize_t max_record, max_meta, max_tag, max_node;
    if (!PyArg_ParseTuple(args, "KLO!OOO(nnnn)|O", &first_seq, &ts, &PyList_Type, &datas, &tags, &nodes,
                          &metas, &max_record, &max_meta, &max_tag, &max_node, &delays))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(datas);
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "no records");
        return NULL;
    }
    PyObject *lists[4] = {tags, nodes, metas, delays};
    for (int k = 0; k < 4; k++) {
        if (lists[k] != Py_None && (!PyList_Check(lists[k]) || PyList_GET_SIZE(lists[k]) != n)) {
            PyErr_SetString(PyExc_TypeError, "tags, nodes, metas and delays must be None or lists as long as datas");
            return NULL;
        }
    }
    rec_t *recs = PyMem_Calloc((size_t)n, sizeof(rec_t));
    if (!recs) return PyErr_NoMemory();

    Py_ssize_t total = 0;
    int any_tag = tags != Py_None, any_meta = metas != Py_None;
    int ts_len = i64_len(ts);
    for (Py_ssize_t i = 0; i < n; i++) {
        rec_t *r = &recs[i];
        if (PyObject_GetBuffer(PyList_GET_ITEM(datas, i), &r->data, PyBUF_SIMPLE) < 0) goto fail;
        if (any_meta) {
            PyObject *m = PyList_GET_ITEM(metas, i);
            if (m != Py_None) {
                if (PyObject_GetBuffer(m, &r->meta, PyBUF_SIMPLE) < 0) goto fail;
                r->has_meta = 1;
            }
        }
        Py_ssize_t tag_chars, node_chars;
        if (optional_str(tags, i, &r->tag, &r->tag_len, &tag_chars) < 0) goto fail;
        if (optional_str(nodes, i, &r->node, &r->node_len, &node_chars) < 0) goto fail;
        Py_ssize_t meta_len = r->has_meta ? r->meta.len : 0;
        const char *field = NULL;
        Py_ssize_t size = 0, limit = 0;
        if (r->tag && tag_chars > max_tag) {
            field = "tag"; size = tag_chars; limit = max_tag;
        } else if (r->node && node_chars > max_node) {
            field = "node"; size = node_chars; limit = max_node;
        } else if (r->has_meta && meta_len > max_meta) {
            field = "meta"; size = meta_len; limit = max_meta;
        } else if (r->data.len + meta_len > max_record) {
            field = "record"; size = r->data.len + meta_len; limit = max_record;
        }
        if (field) {
            release(recs, n);
            return Py_BuildValue("(nsnn)", i, field, size, limit);
        }
        Py_ssize_t len = KLEN(K_SEQ) + u64_digits(first_seq + (uint64_t)i) + KLEN(K_TS) + ts_len + KLEN(K_DATA)
                         + r->data.len + 1;
        if (delays != Py_None) {
            r->delay = PyLong_AsLongLong(PyList_GET_ITEM(delays, i));
            if (r->delay == -1 && PyErr_Occurred()) goto fail;
            if (r->delay > 0) len += KLEN(K_DELAY) + i64_len(r->delay);
        }
        if (r->node) {
            r->node_json = escaped_len(r->node, r->node_len) + 2;
            len += KLEN(K_NODE) + r->node_json;
        }
        if (r->tag) {
            r->tag_json = escaped_len(r->tag, r->tag_len) + 2;
            len += KLEN(K_TAG) + r->tag_json;
        }
        if (r->has_meta) len += KLEN(K_META) + meta_len;
        total += len + (i ? 1 : 0);
    }

    PyObject *blob = PyBytes_FromStringAndSize(NULL, total);
    PyObject *ends = PyBytes_FromStringAndSize(NULL, n * 4);
    PyObject *data_at = PyBytes_FromStringAndSize(NULL, n * 2);
    PyObject *tag_at = any_tag ? PyBytes_FromStringAndSize(NULL, n * 2) : (Py_INCREF(Py_None), Py_None);
    PyObject *meta_at = any_meta ? PyBytes_FromStringAndSize(NULL, n * 4) : (Py_INCREF(Py_None), Py_None);
    if (!blob || !ends || !data_at || !tag_at || !meta_at) {
        Py_XDECREF(blob); Py_XDECREF(ends); Py_XDECREF(data_at); Py_XDECREF(tag_at); Py_XDECREF(meta_at);
        goto fail;
    }
    char *base = PyBytes_AS_STRING(blob), *p = base;
    uint32_t *e = (uint32_t *)PyBytes_AS_STRING(ends);
    uint16_t *d = (uint16_t *)PyBytes_AS_STRING(data_at);
    uint16_t *t = any_tag ? (uint16_t *)PyBytes_AS_STRING(tag_at) : NULL;
    uint32_t *m = any_meta ? (uint32_t *)PyBytes_AS_STRING(meta_at) : NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        rec_t *r = &recs[i];
        if (i) *p++ = ',';
        char *start = p;
        memcpy(p, K_SEQ, KLEN(K_SEQ)); p += KLEN(K_SEQ);
        p = write_u64(p, first_seq + (uint64_t)i);
        memcpy(p, K_TS, KLEN(K_TS)); p += KLEN(K_TS);
        p = write_i64(p, ts);
        if (r->delay > 0) {
            memcpy(p, K_DELAY, KLEN(K_DELAY)); p += KLEN(K_DELAY);
            p = write_i64(p, r->delay);
        }
        if (r->node) {
            memcpy(p, K_NODE, KLEN(K_NODE)); p += KLEN(K_NODE);
            p = write_escaped(p, r->node, r->node_len);
        }
        if (t) t[i] = r->tag ? (uint16_t)(p - start) : 0;
        if (r->tag) {
            memcpy(p, K_TAG, KLEN(K_TAG)); p += KLEN(K_TAG);
            p = write_escaped(p, r->tag, r->tag_len);
        }
        d[i] = (uint16_t)(p - start);
        memcpy(p, K_DATA, KLEN(K_DATA)); p += KLEN(K_DATA);
        memcpy(p, r->data.buf, (size_t)r->data.len); p += r->data.len;
        if (m) m[i] = r->has_meta ? (uint32_t)(p - start) : 0;
        if (r->has_meta) {
            memcpy(p, K_META, KLEN(K_META)); p += KLEN(K_META);
            memcpy(p, r->meta.buf, (size_t)r->meta.len); p += r->meta.len;
        }
        *p++ = '}';
        e[i] = (uint32_t)(p - base);
    }
    release(recs, n);
    if (p - base != total) {
        Py_DECREF(blob); Py_DECREF(ends); Py_DECREF(data_at); Py_DECREF(tag_at); Py_DECREF(meta_at);
        PyErr_SetString(PyExc_SystemError, "record codec size mismatch");
        return NULL;
    }
    return Py_BuildValue("(NNNNN)", blob, ends, data_at, tag_at, meta_at);

fail:
    release(recs, n);
    return NULL;
}

/* columns(records, batch_node, absent, encode_meta[, batch_delay])
 *     -> (datas, tags, nodes, metas, delays)
 *
 * Splits decoded record objects (attributes data, tag, node, meta and — when the object has
 * it — delay_ms; ``absent`` marks a field the request did not set) into the codec's columns:
 * tags/nodes/metas/delays are None when no record has one, else lists with None (delays: 0)
 * for records without one. A record without a node gets ``batch_node`` (None: none), one
 * without a delay_ms gets ``batch_delay`` (None or absent: none). meta objects are turned into
 * JSON bytes by ``encode_meta``; delay_ms values are passed on as they are (the engine checks
 * and clamps them).
 */
static PyObject *columns(PyObject *self, PyObject *args) {
    PyObject *records, *batch_node, *absent, *encode_meta, *batch_delay = Py_None;
    if (!PyArg_ParseTuple(args, "O!OOO|O", &PyList_Type, &records, &batch_node, &absent, &encode_meta,
                          &batch_delay))
        return NULL;
    static PyObject *s_data, *s_tag, *s_node, *s_meta, *s_delay, *zero;
    if (!s_data) {
        s_data = PyUnicode_InternFromString("data");
        s_tag = PyUnicode_InternFromString("tag");
        s_node = PyUnicode_InternFromString("node");
        s_meta = PyUnicode_InternFromString("meta");
        s_delay = PyUnicode_InternFromString("delay_ms");
        zero = PyLong_FromLong(0);
        if (!s_data || !s_tag || !s_node || !s_meta || !s_delay || !zero) return NULL;
    }
    if (batch_delay == absent) batch_delay = Py_None;
    Py_ssize_t n = PyList_GET_SIZE(records);
    PyObject *datas = PyList_New(n), *tags = PyList_New(n), *nodes = PyList_New(n), *metas = PyList_New(n);
    PyObject *delays = PyList_New(n);
    int any_tag = 0, any_node = batch_node != Py_None, any_meta = 0, any_delay = batch_delay != Py_None;
    if (!datas || !tags || !nodes || !metas || !delays) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(records, i);
        PyObject *v = PyObject_GetAttr(r, s_data);
        if (!v) goto fail;
        PyList_SET_ITEM(datas, i, v);
        v = PyObject_GetAttr(r, s_tag);
        if (!v) goto fail;
        if (v == absent || v == Py_None) { Py_DECREF(v); Py_INCREF(Py_None); v = Py_None; } else any_tag = 1;
        PyList_SET_ITEM(tags, i, v);
        v = PyObject_GetAttr(r, s_node);
        if (!v) goto fail;
        if (v == absent || v == Py_None) { Py_DECREF(v); Py_INCREF(batch_node); v = batch_node; } else any_node = 1;
        PyList_SET_ITEM(nodes, i, v);
        v = PyObject_GetAttr(r, s_meta);
        if (!v) goto fail;
        if (v == absent || v == Py_None) {
            Py_DECREF(v); Py_INCREF(Py_None); v = Py_None;
        } else {
            PyObject *encoded = PyObject_CallOneArg(encode_meta, v);
            Py_DECREF(v);
            if (!encoded) goto fail;
            v = encoded;
            any_meta = 1;
        }
        PyList_SET_ITEM(metas, i, v);
        v = PyObject_GetAttr(r, s_delay);
        if (!v) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) goto fail;
            PyErr_Clear();  /* a record type without the field: no delay */
            v = Py_None;
            Py_INCREF(v);
        }
        if (v == absent || v == Py_None) {
            Py_DECREF(v);
            v = batch_delay != Py_None ? batch_delay : zero;
            Py_INCREF(v);
        } else {
            any_delay = 1;
        }
        PyList_SET_ITEM(delays, i, v);
    }
    if (!any_tag) { Py_DECREF(tags); Py_INCREF(Py_None); tags = Py_None; }
    if (!any_node) { Py_DECREF(nodes); Py_INCREF(Py_None); nodes = Py_None; }
    if (!any_meta) { Py_DECREF(metas); Py_INCREF(Py_None); metas = Py_None; }
    if (!any_delay) { Py_DECREF(delays); Py_INCREF(Py_None); delays = Py_None; }
    return Py_BuildValue("(NNNNN)", datas, tags, nodes, metas, delays);
fail:
    Py_XDECREF(datas); Py_XDECREF(tags); Py_XDECREF(nodes); Py_XDECREF(metas); Py_XDECREF(delays);
    return NULL;
}


/* -- record batches as bytes: the APPEND frame payload and segment chunks ------------------- *
 *
 * encode_batch(batch) -> bytes, and frame(frame_type, lsn, head, batch) -> bytes: the WAL frame
 *
 *     u32 body_length | u32 crc32(body) | body,  body = u8 frame_type | u64 lsn | head | batch
 *
 * where batch (a storage.formats.RecordBatch) is laid out as formats.batch_parts documents:
 *
 *     u64 first_seq | u32 count | u32 blob_len | u8 flags | u16 ts_run_count
 *     ts_run_count x (u32 ordinal | i64 ts) | u32[count] ends | u16[count] data_at
 *     [flags & 1: u16[count] tag_at | u16[count] tag_len + tag bytes]     (0xFFFF = no tag)
 *     [flags & 2: u16[count] node_len + node bytes]                       (0xFFFF = no node)
 *     [flags & 4: u32[count] meta_at] | blob
 *
 * All integers little-endian (the build refuses a big-endian target). The CRC is zlib's crc32,
 * called through storage/checksum.py (ISA-L's), the very function recovery checks with. */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the storage formats are little-endian; this codec writes native integers"
#endif

static PyObject *crc32_fn = NULL;

/* RecordBatch attribute names, interned once */
enum { A_FIRST_SEQ, A_BLOB, A_TS_RUNS, A_TAGS, A_NODES, A_ENDS, A_DATA_AT, A_TAG_AT, A_META_AT, A_COUNT, N_ATTRS };
static const char *attr_names[N_ATTRS] = {"first_seq", "blob", "ts_runs", "tags", "nodes",
                                          "ends", "data_at", "tag_at", "meta_at", "count"};
static PyObject *attrs[N_ATTRS];

typedef struct {
    PyObject *blob, *ts_runs, *tags, *nodes;
    Py_buffer ends, data_at, tag_at, meta_at;
    int has_tag_at, has_meta_at;
    unsigned long long first_seq;
    Py_ssize_t count;
} batch_t;

static void batch_release(batch_t *b) {
    Py_XDECREF(b->blob); Py_XDECREF(b->ts_runs); Py_XDECREF(b->tags); Py_XDECREF(b->nodes);
    if (b->ends.obj) PyBuffer_Release(&b->ends);
    if (b->data_at.obj) PyBuffer_Release(&b->data_at);
    if (b->has_tag_at) PyBuffer_Release(&b->tag_at);
    if (b->has_meta_at) PyBuffer_Release(&b->meta_at);
}

static int column(PyObject *batch, int attr, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t n,
                  int *present) {
    const char *name = attr_names[attr];
    PyObject *obj = PyObject_GetAttr(batch, attrs[attr]);
    if (!obj) return -1;
    if (obj == Py_None && present) {
        Py_DECREF(obj);
        *present = 0;
        return 0;
    }
    int rc = PyObject_GetBuffer(obj, view, PyBUF_SIMPLE);
    Py_DECREF(obj);
    if (rc < 0) return -1;
    if (present) *present = 1;
    if (view->len != itemsize * n) {
        PyErr_Format(PyExc_ValueError, "batch column %s holds %zd bytes, expected %zd", name, view->len,
                     itemsize * n);
        return -1;
    }
    return 0;
}

/* Fills b from a RecordBatch; returns the encoded batch size, or -1. */
static Py_ssize_t batch_load(PyObject *batch, batch_t *b) {
    memset(b, 0, sizeof(*b));
    PyObject *first = PyObject_GetAttr(batch, attrs[A_FIRST_SEQ]);
    if (!first) return -1;
    b->first_seq = PyLong_AsUnsignedLongLong(first);
    Py_DECREF(first);
    if (PyErr_Occurred()) return -1;
    b->blob = PyObject_GetAttr(batch, attrs[A_BLOB]);
    b->ts_runs = PyObject_GetAttr(batch, attrs[A_TS_RUNS]);
    b->tags = PyObject_GetAttr(batch, attrs[A_TAGS]);
    b->nodes = PyObject_GetAttr(batch, attrs[A_NODES]);
    if (!b->blob || !b->ts_runs || !b->tags || !b->nodes) return -1;
    if (!PyBytes_Check(b->blob) || !PyList_Check(b->ts_runs)) {
        PyErr_SetString(PyExc_TypeError, "batch.blob must be bytes and batch.ts_runs a list");
        return -1;
    }
    PyObject *count = PyObject_GetAttr(batch, attrs[A_COUNT]);
    if (!count) return -1;
    b->count = PyLong_AsSsize_t(count);
    Py_DECREF(count);
    if (b->count < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "negative batch count");
        return -1;
    }
    Py_ssize_t n = b->count;
    if (column(batch, A_ENDS, &b->ends, 4, n, NULL) < 0) return -1;
    if (column(batch, A_DATA_AT, &b->data_at, 2, n, NULL) < 0) return -1;
    if (column(batch, A_TAG_AT, &b->tag_at, 2, n, &b->has_tag_at) < 0) return -1;
    if (column(batch, A_META_AT, &b->meta_at, 4, n, &b->has_meta_at) < 0) return -1;
    Py_ssize_t size = 19 + 12 * PyList_GET_SIZE(b->ts_runs) + 6 * n + PyBytes_GET_SIZE(b->blob);
    PyObject *strs[2] = {b->has_tag_at ? b->tags : Py_None, b->nodes};
    for (int k = 0; k < 2; k++) {
        if (strs[k] == Py_None) continue;
        if (!PyList_Check(strs[k]) || PyList_GET_SIZE(strs[k]) != n) {
            PyErr_SetString(PyExc_TypeError, "batch.tags/nodes must be None or lists as long as the batch");
            return -1;
        }
        size += 2 * n;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *v = PyList_GET_ITEM(strs[k], i);
            if (v == Py_None) continue;
            Py_ssize_t len;
            if (!PyUnicode_AsUTF8AndSize(v, &len)) return -1;
            if (len >= 0xFFFF) {
                PyErr_SetString(PyExc_ValueError, "a tag or node of 64 KiB or more cannot be stored");
                return -1;
            }
            size += len;
        }
    }
    if (b->has_tag_at) size += 2 * n;
    if (b->has_meta_at) size += 4 * n;
    return size;
}

static char *put(char *p, const void *src, size_t len) {
    memcpy(p, src, len);
    return p + len;
}

static char *put_strings(char *p, PyObject *list, Py_ssize_t n) {
    uint16_t *lens = (uint16_t *)p;
    p += 2 * n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(list, i);
        if (v == Py_None) {
            lens[i] = 0xFFFF;
            continue;
        }
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(v, &len); /* cached by batch_load */
        lens[i] = (uint16_t)len;
        p = put(p, s, (size_t)len);
    }
    return p;
}

static char *batch_write(char *p, batch_t *b) {
    Py_ssize_t n = b->count, runs = PyList_GET_SIZE(b->ts_runs);
    uint64_t first = b->first_seq;
    uint32_t count = (uint32_t)n, blob_len = (uint32_t)PyBytes_GET_SIZE(b->blob);
    uint8_t flags = (b->has_tag_at ? 1 : 0) | (b->nodes != Py_None ? 2 : 0) | (b->has_meta_at ? 4 : 0);
    uint16_t nruns = (uint16_t)runs;
    p = put(p, &first, 8); p = put(p, &count, 4); p = put(p, &blob_len, 4); p = put(p, &flags, 1);
    p = put(p, &nruns, 2);
    for (Py_ssize_t k = 0; k < runs; k++) {
        PyObject *run = PyList_GET_ITEM(b->ts_runs, k);
        uint32_t ordinal = (uint32_t)PyLong_AsUnsignedLong(PyTuple_GET_ITEM(run, 0));
        int64_t ts = PyLong_AsLongLong(PyTuple_GET_ITEM(run, 1));
        p = put(p, &ordinal, 4); p = put(p, &ts, 8);
    }
    p = put(p, b->ends.buf, (size_t)b->ends.len);
    p = put(p, b->data_at.buf, (size_t)b->data_at.len);
    if (b->has_tag_at) {
        p = put(p, b->tag_at.buf, (size_t)b->tag_at.len);
        p = put_strings(p, b->tags, n);
    }
    if (b->nodes != Py_None) p = put_strings(p, b->nodes, n);
    if (b->has_meta_at) p = put(p, b->meta_at.buf, (size_t)b->meta_at.len);
    return put(p, PyBytes_AS_STRING(b->blob), (size_t)blob_len);
}

static int runs_valid(batch_t *b) {
    Py_ssize_t runs = PyList_GET_SIZE(b->ts_runs);
    if (runs > 0xFFFF) {
        PyErr_SetString(PyExc_ValueError, "too many ts runs in one batch");
        return 0;
    }
    for (Py_ssize_t k = 0; k < runs; k++) {
        PyObject *run = PyList_GET_ITEM(b->ts_runs, k);
        if (!PyTuple_Check(run) || PyTuple_GET_SIZE(run) != 2) {
            PyErr_SetString(PyExc_TypeError, "batch.ts_runs items must be (ordinal, ts) tuples");
            return 0;
        }
    }
    return 1;
}

static PyObject *encode_batch(PyObject *self, PyObject *batch) {
    batch_t b;
    Py_ssize_t size = batch_load(batch, &b);
    PyObject *out = NULL;
    if (size >= 0 && runs_valid(&b) && (out = PyBytes_FromStringAndSize(NULL, size))) {
        char *end = batch_write(PyBytes_AS_STRING(out), &b);
        if (PyErr_Occurred() || end - PyBytes_AS_STRING(out) != size) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "batch codec size mismatch");
            Py_CLEAR(out);
        }
    }
    batch_release(&b);
    return out;
}

static PyObject *frame(PyObject *self, PyObject *args) {
    unsigned char frame_type;
    unsigned long long lsn;
    Py_buffer head;
    PyObject *batch;
    if (!PyArg_ParseTuple(args, "bKy*O", &frame_type, &lsn, &head, &batch)) return NULL;
    batch_t b;
    PyObject *out = NULL;
    Py_ssize_t size = batch_load(batch, &b);
    if (size >= 0 && runs_valid(&b)) {
        Py_ssize_t body = 9 + head.len + size;
        if (body >= ((Py_ssize_t)1 << 31)) {
            PyErr_SetString(PyExc_ValueError, "frame body over 2 GiB");
        } else if ((out = PyBytes_FromStringAndSize(NULL, 8 + body))) {
            char *base = PyBytes_AS_STRING(out), *p = base + 8;
            uint32_t body_len = (uint32_t)body;
            memcpy(base, &body_len, 4);
            p = put(p, &frame_type, 1); p = put(p, &lsn, 8); p = put(p, head.buf, (size_t)head.len);
            char *end = batch_write(p, &b);
            PyObject *crc = NULL;
            if (!PyErr_Occurred() && end - base == 8 + body) {
                PyObject *view = PyMemoryView_FromMemory(base + 8, body, PyBUF_READ);
                crc = view ? PyObject_CallOneArg(crc32_fn, view) : NULL;
                Py_XDECREF(view);
            } else if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_SystemError, "frame codec size mismatch");
            }
            uint32_t c = crc ? (uint32_t)PyLong_AsUnsignedLong(crc) : 0;
            Py_XDECREF(crc);
            if (PyErr_Occurred()) Py_CLEAR(out);
            else memcpy(base + 4, &c, 4);
        }
    }
    batch_release(&b);
    PyBuffer_Release(&head);
    return out;
}

static PyMethodDef methods[] = {
    {"columns", columns, METH_VARARGS,
     "columns(records, batch_node, absent, encode_meta[, batch_delay]) -> (datas, tags, nodes, metas, delays)"},
    {"encode_records", encode_records, METH_VARARGS,
     "encode_records(first_seq, ts, datas, tags, nodes, metas, limits[, delays]) -> "
     "(blob, ends, data_at, tag_at, meta_at) or (index, field, size, limit)"},
    {"encode_batch", encode_batch, METH_O, "encode_batch(batch) -> bytes (a RecordBatch, formats.batch_parts)"},
    {"frame", frame, METH_VARARGS,
     "frame(frame_type, lsn, head, batch) -> bytes: a WAL frame whose payload is head + the batch"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_codec", "The record and batch codecs.", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__codec(void) {
    PyObject *checksum = PyImport_ImportModule("topics_engine.storage.checksum");
    if (!checksum) return NULL;
    crc32_fn = PyObject_GetAttrString(checksum, "crc32");
    Py_DECREF(checksum);
    if (!crc32_fn) return NULL;
    for (int k = 0; k < N_ATTRS; k++)
        if (!(attrs[k] = PyUnicode_InternFromString(attr_names[k]))) return NULL;
    return PyModule_Create(&module);
}
