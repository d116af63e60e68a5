/* evo_skill.h: the Evo guest helper for C and C++ skills (clang + wasi-libc).
 *
 *     #include "evo_skill.h"
 *
 *     bool exports_evo_skill_skill_execute(evo_json_t *input, evo_output_t *ret,
 *                                          evo_error_t *err) {
 *         char *name = evo_json_string(input, "name");
 *         ...
 *         return evo_ok(ret, "{\"greeting\":\"Hello!\"}");
 *     }
 *
 * `evo skill build` generates `build/plugin.h` and `build/plugin.c` from `wit/skill.wit`
 * (the types and the host's functions: `evo_skill_context_call`, `..._memory_search`,
 * ...), and the manifest function from `manifest.json`. The skill writes `execute`: its
 * input has already passed the input schema; it sets `ret` and returns true, or sets
 * `err` and returns false (`evo_fail`). Strings handed to `ret` and `err` must be
 * malloc'd: the bindings free them after the host has read them (the helpers below
 * copy what they are given).
 *
 * Header-only, C99 and C++11: every function is `static inline`, so each source file that
 * includes it gets its own copy.
 */
#ifndef EVO_SKILL_H
#define EVO_SKILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/** JSON text, as the host passes the input and takes the output. */
typedef exports_evo_skill_skill_json_t evo_json_t;
/** What a successful `execute` returns. */
typedef exports_evo_skill_skill_skill_output_t evo_output_t;
/** An expected failure `execute` reports. */
typedef exports_evo_skill_skill_skill_error_t evo_error_t;

/** The kinds of `evo_fail`. */
#define EVO_INVALID_INPUT EVO_SKILL_TYPES_SKILL_ERROR_INVALID_INPUT
#define EVO_NOT_FOUND EVO_SKILL_TYPES_SKILL_ERROR_NOT_FOUND
#define EVO_DENIED EVO_SKILL_TYPES_SKILL_ERROR_DENIED
#define EVO_TIMEOUT EVO_SKILL_TYPES_SKILL_ERROR_TIMEOUT
#define EVO_FAILED EVO_SKILL_TYPES_SKILL_ERROR_FAILED

/** The levels of `evo_log`. */
#define EVO_LOG_DEBUG EVO_SKILL_TYPES_LOG_LEVEL_DEBUG
#define EVO_LOG_INFO EVO_SKILL_TYPES_LOG_LEVEL_INFO
#define EVO_LOG_WARN EVO_SKILL_TYPES_LOG_LEVEL_WARN
#define EVO_LOG_ERROR EVO_SKILL_TYPES_LOG_LEVEL_ERROR

/** Sets the output to a copy of the JSON text `json`; returns true. */
static inline bool evo_ok(evo_output_t *ret, const char *json) {
    memset(ret, 0, sizeof *ret);
    plugin_string_dup(&ret->output, json);
    return true;
}

/** Sets `err` to `kind` (`EVO_INVALID_INPUT`, ...) with a copy of `message`; returns
 *  false, so that `return evo_fail(err, EVO_INVALID_INPUT, "...");` ends `execute`. */
static inline bool evo_fail(evo_error_t *err, uint8_t kind, const char *message) {
    if (kind > EVO_FAILED) {
        kind = EVO_FAILED;
    }
    err->tag = kind;
    /* Every case of the variant is a string at the same place. */
    plugin_string_dup(&err->val.failed, message);
    return false;
}

/** Writes `message` to the host's log, tagged with the skill's name. */
static inline void evo_log(uint8_t level, const char *message) {
    plugin_string_t text;
    plugin_string_set(&text, message);
    evo_skill_context_log(level, &text);
}

/* A reader of the input's top-level fields. It never reads past the text, and takes
 * valid JSON as the host sends it (the input has passed its schema). */

typedef struct {
    const char *at;
    const char *end;
} evo__cursor;

static inline void evo__space(evo__cursor *c) {
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n' || *c->at == '\r')) {
        c->at++;
    }
}

typedef struct {
    char *bytes;
    size_t len;
    size_t cap;
} evo__buffer;

static inline bool evo__push(evo__buffer *b, const char *bytes, size_t len) {
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16;
        while (cap < b->len + len + 1) {
            cap *= 2;
        }
        char *grown = (char *)realloc(b->bytes, cap);
        if (!grown) {
            return false;
        }
        b->bytes = grown;
        b->cap = cap;
    }
    memcpy(b->bytes + b->len, bytes, len);
    b->len += len;
    b->bytes[b->len] = '\0';
    return true;
}

static inline int evo__hex4(evo__cursor *c) {
    int value = 0;
    if (c->end - c->at < 4) {
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        char h = *c->at++;
        value <<= 4;
        if (h >= '0' && h <= '9') {
            value |= h - '0';
        } else if (h >= 'a' && h <= 'f') {
            value |= h - 'a' + 10;
        } else if (h >= 'A' && h <= 'F') {
            value |= h - 'A' + 10;
        } else {
            return -1;
        }
    }
    return value;
}

static inline bool evo__utf8(evo__buffer *b, uint32_t cp) {
    char out[4];
    size_t n;
    if (cp < 0x80) {
        out[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return evo__push(b, out, n);
}

/* The string at the cursor (on its opening quote), decoded into `out` when it is not
 * NULL; false when it is not a well-formed string. */
static inline bool evo__string(evo__cursor *c, evo__buffer *out) {
    if (c->at >= c->end || *c->at != '"') {
        return false;
    }
    c->at++;
    while (c->at < c->end && *c->at != '"') {
        const char *run = c->at;
        while (c->at < c->end && *c->at != '"' && *c->at != '\\') {
            c->at++;
        }
        if (out && c->at > run && !evo__push(out, run, (size_t)(c->at - run))) {
            return false;
        }
        if (c->at >= c->end || *c->at == '"') {
            break;
        }
        c->at++; /* the backslash */
        if (c->at >= c->end) {
            return false;
        }
        char escape = *c->at++;
        uint32_t cp;
        switch (escape) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u': {
            int unit = evo__hex4(c);
            if (unit < 0) {
                return false;
            }
            cp = (uint32_t)unit;
            if (cp >= 0xD800 && cp < 0xDC00 && c->end - c->at >= 6 && c->at[0] == '\\' && c->at[1] == 'u') {
                evo__cursor low = {c->at + 2, c->end};
                int second = evo__hex4(&low);
                if (second >= 0xDC00 && second < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)second - 0xDC00);
                    c->at = low.at;
                }
            }
            if (cp >= 0xD800 && cp < 0xE000) {
                cp = 0xFFFD; /* a lone surrogate */
            }
            break;
        }
        default:
            return false;
        }
        if (out && !evo__utf8(out, cp)) {
            return false;
        }
    }
    if (c->at >= c->end) {
        return false;
    }
    c->at++;
    return true;
}

/* Steps over the value at the cursor. */
static inline bool evo__skip(evo__cursor *c) {
    size_t depth = 0;
    do {
        evo__space(c);
        if (c->at >= c->end) {
            return false;
        }
        char ch = *c->at;
        if (ch == '"') {
            if (!evo__string(c, NULL)) {
                return false;
            }
        } else if (ch == '{' || ch == '[') {
            depth++;
            c->at++;
        } else if (ch == '}' || ch == ']') {
            if (depth == 0) {
                return false;
            }
            depth--;
            c->at++;
        } else if (ch == ',' || ch == ':') {
            if (depth == 0) {
                return false;
            }
            c->at++;
        } else {
            while (c->at < c->end && !strchr(",:}] \t\r\n", *c->at)) {
                c->at++;
            }
        }
    } while (depth > 0);
    return true;
}

/* Puts the cursor on the value of the top-level field `key` of the object `json`. */
static inline bool evo__field(const evo_json_t *json, const char *key, evo__cursor *c) {
    c->at = (const char *)json->ptr;
    c->end = c->at + json->len;
    evo__space(c);
    if (c->at >= c->end || *c->at != '{') {
        return false;
    }
    c->at++;
    for (;;) {
        evo__space(c);
        if (c->at >= c->end || *c->at != '"') {
            return false;
        }
        evo__buffer name = {NULL, 0, 0};
        bool read = evo__string(c, &name);
        bool same = read && strcmp(name.bytes ? name.bytes : "", key) == 0;
        free(name.bytes);
        evo__space(c);
        if (!read || c->at >= c->end || *c->at != ':') {
            return false;
        }
        c->at++;
        evo__space(c);
        if (same) {
            return true;
        }
        if (!evo__skip(c)) {
            return false;
        }
        evo__space(c);
        if (c->at >= c->end || *c->at != ',') {
            return false;
        }
        c->at++;
    }
}

/** The string field `key` of the object `json`, decoded, as a malloc'd NUL-terminated
 *  UTF-8 string (free it); NULL when there is no such field or it is not a string. */
static inline char *evo_json_string(const evo_json_t *json, const char *key) {
    evo__cursor c;
    evo__buffer out = {NULL, 0, 0};
    if (!evo__field(json, key, &c) || !evo__push(&out, "", 0)) {
        return NULL;
    }
    if (!evo__string(&c, &out)) {
        free(out.bytes);
        return NULL;
    }
    return out.bytes;
}

/** The number field `key` of the object `json` into `*out`; false when there is no
 *  such field or it is not a number. */
static inline bool evo_json_number(const evo_json_t *json, const char *key, double *out) {
    evo__cursor c;
    if (!evo__field(json, key, &c)) {
        return false;
    }
    char digits[64];
    size_t n = 0;
    while (c.at < c.end && n + 1 < sizeof digits && strchr("+-.0123456789eE", *c.at) && *c.at) {
        digits[n++] = *c.at++;
    }
    digits[n] = '\0';
    char *rest;
    double value = strtod(digits, &rest);
    if (n == 0 || *rest != '\0') {
        return false;
    }
    *out = value;
    return true;
}

/** The boolean field `key` of the object `json` into `*out`; false when there is no
 *  such field or it is not `true` or `false`. */
static inline bool evo_json_bool(const evo_json_t *json, const char *key, bool *out) {
    evo__cursor c;
    if (!evo__field(json, key, &c)) {
        return false;
    }
    size_t left = (size_t)(c.end - c.at);
    if (left >= 4 && memcmp(c.at, "true", 4) == 0) {
        *out = true;
        return true;
    }
    if (left >= 5 && memcmp(c.at, "false", 5) == 0) {
        *out = false;
        return true;
    }
    return false;
}

/** `text` (UTF-8) as a JSON string, quotes included, malloc'd (free it). */
static inline char *evo_json_quote(const char *text) {
    evo__buffer out = {NULL, 0, 0};
    bool fine = evo__push(&out, "\"", 1);
    for (const char *at = text; fine && *at; at++) {
        unsigned char ch = (unsigned char)*at;
        char escaped[8];
        if (ch == '"' || ch == '\\') {
            escaped[0] = '\\';
            escaped[1] = (char)ch;
            fine = evo__push(&out, escaped, 2);
        } else if (ch < 0x20) {
            snprintf(escaped, sizeof escaped, "\\u%04x", ch);
            fine = evo__push(&out, escaped, 6);
        } else {
            fine = evo__push(&out, at, 1);
        }
    }
    if (!fine || !evo__push(&out, "\"", 1)) {
        free(out.bytes);
        return NULL;
    }
    return out.bytes;
}

#ifdef __cplusplus
}
#endif

#endif /* EVO_SKILL_H */
