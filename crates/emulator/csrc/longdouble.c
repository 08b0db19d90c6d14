/* limitlab: C `long double` helpers for INCRBYFLOAT and HINCRBYFLOAT.
 *
 * Redis 7.0 does this arithmetic in `long double` (80-bit extended precision on x86-64) and prints the
 * result with `ld2string(..., LD_STR_HUMAN)`. Rust has no such type, so the parsing, the addition and
 * the formatting are done here, mirroring Redis's `string2ld` and `ld2string` rules. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Redis's MAX_LONG_DOUBLE_CHARS: the buffer size for parsing and printing. */
#define LL_LD_CHARS (5 * 1024)

/* Status codes of limitlab_ld_incr (a non-negative result is the output length). */
#define LL_BAD_CURRENT (-1)
#define LL_BAD_INCR (-2)
#define LL_NAN_OR_INF (-3)
#define LL_NO_ROOM (-4)

/* Redis's string2ld: strtold on a NUL-terminated copy, refusing leading spaces, trailing garbage (an
 * embedded NUL included), overflow, underflow to zero and NaN. Returns 1 and sets *out on success. */
static int ll_string2ld(const char *s, size_t len, long double *out) {
    char buf[LL_LD_CHARS];
    char *end;
    long double v;

    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtold(buf, &end);
    if (isspace((unsigned char)buf[0]) || end[0] != '\0' || (size_t)(end - buf) != len ||
        ((errno == ERANGE || errno == EINVAL) && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) ||
        errno == EINVAL || isnan(v))
        return 0;
    *out = v;
    return 1;
}

/* Redis's ld2string in LD_STR_HUMAN mode: "%.17Lf", trailing zeros and a bare dot removed, "-0" as "0";
 * infinities as "inf"/"-inf". Returns the length, or LL_NO_ROOM. */
static int ll_ld2string_human(char *buf, size_t cap, long double v) {
    int l;

    if (isinf(v)) {
        if (cap < 5) return LL_NO_ROOM;
        if (v > 0) {
            memcpy(buf, "inf", 3);
            l = 3;
        } else {
            memcpy(buf, "-inf", 4);
            l = 4;
        }
        buf[l] = '\0';
        return l;
    }
    l = snprintf(buf, cap, "%.17Lf", v);
    if (l < 0 || (size_t)l + 1 > cap) return LL_NO_ROOM;
    if (strchr(buf, '.') != NULL) {
        char *p = buf + l - 1;
        while (*p == '0') {
            p--;
            l--;
        }
        if (*p == '.') l--;
    }
    if (l == 2 && buf[0] == '-' && buf[1] == '0') {
        buf[0] = '0';
        l = 1;
    }
    buf[l] = '\0';
    return l;
}

/* 1 when `s` is a float Redis's string2ld accepts. */
int limitlab_ld_valid(const char *s, size_t len) {
    long double v;
    return ll_string2ld(s, len, &v);
}

/* current + incr, both parsed with string2ld (the increment first, as HINCRBYFLOAT does), written to
 * `out` as ld2string(LD_STR_HUMAN) prints it. Returns the length written or a negative status. */
int limitlab_ld_incr(const char *cur, size_t curlen, const char *incr, size_t incrlen, char *out, size_t cap) {
    long double a, b, sum;

    if (!ll_string2ld(incr, incrlen, &b)) return LL_BAD_INCR;
    if (!ll_string2ld(cur, curlen, &a)) return LL_BAD_CURRENT;
    sum = a + b;
    if (isnan(sum) || isinf(sum)) return LL_NAN_OR_INF;
    return ll_ld2string_human(out, cap, sum);
}

/* Prints a parsed float as ld2string(LD_STR_HUMAN) does (for tests and callers that only format). */
int limitlab_ld_format(const char *s, size_t len, char *out, size_t cap) {
    long double v;
    if (!ll_string2ld(s, len, &v)) return LL_BAD_INCR;
    return ll_ld2string_human(out, cap, v);
}
