/* fuzz.h - what the libFuzzer targets share: a check that aborts (so
 * libFuzzer keeps the input as a crash), and the expansion that lets a
 * small input stand for a long line.
 *
 * The readers' interesting edges sit at 64 KiB (SR_LINE_MAX) and at their
 * buffer size, far beyond what a mutator grows an input to in minutes. So
 * byte 0xFF (never valid UTF-8, so no realistic text loses anything) starts
 * a run: 0xFF H L repeats the byte before it (or 'x' at the start) H * 256 + L
 * more times. Any length is three bytes away: "x" 0xFF 0xFF 0xFF is a line
 * of exactly SR_LINE_MAX bytes.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		abort(); \
	} \
} while (0)

/* Expanded inputs stop growing here: room for three lines over the
 * reader's buffer (64 KiB + 4 KiB), small enough that an execution stays
 * around a millisecond. */
#define FUZZ_EXPAND_MAX (256 * 1024)

/* The expansion of in (see the top), NUL-terminated, its length in *outlen.
 * One buffer for the process, valid until the next call: a fresh 256 KiB
 * per input costs more in page faults than the code under test. */
static inline char *
fuzz_expand(const uint8_t *in, size_t n, size_t *outlen)
{
	static char *out;
	size_t len = 0;

	if (!out && !(out = malloc(FUZZ_EXPAND_MAX + 1)))
		abort();
	for (size_t i = 0; i < n; i++) {
		size_t rep = 1;
		char c = (char)in[i];

		if (in[i] == 0xFF && i + 2 < n) {
			c = len ? out[len - 1] : 'x';
			rep = (size_t)in[i + 1] << 8 | in[i + 2];
			i += 2;
		}
		if (len + rep > FUZZ_EXPAND_MAX)
			break;
		memset(out + len, c, rep);
		len += rep;
	}
	out[len] = '\0';
	*outlen = len;
	return out;
}

/* A copy of in as a C string (what a parser of one line or one body gets). */
static inline char *
fuzz_cstring(const uint8_t *in, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		abort();
	memcpy(s, in, n);
	s[n] = '\0';
	return s;
}

/* err, as the library leaves it: NUL-terminated inside its buffer. */
static inline int
fuzz_terminated(const char *buf, size_t n)
{
	return memchr(buf, '\0', n) != NULL;
}

#endif
