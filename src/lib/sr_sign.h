/* sr_sign.h - the API of sr_sign.c. */
#ifndef SR_SIGN_H
#define SR_SIGN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

/* {params}: the parameters a carrier receives - the URL's query string,
 * and a form body's fields or a JSON body's top-level strings and integers
 * (body NULL when none is sent) - each decoded, sorted by name then value,
 * joined "k=v&k=v" with nothing encoded, into out; a parameter whose name
 * or value holds skip (the signature's stand-in; NULL or "": none) left
 * out. 0, or -1 when it did not fit. */
int sr_params(const char *url, const char *body, int type, const char *skip, char *out,
    size_t outlen);
/* A request signature: the hex digest (SR_SIGN_MD5, SHA256, or
 * HMAC_SHA256 with key) of data, into out (129 bytes). 0, or -1. */
int sr_digest_hex(int alg, const char *key, size_t keylen, const char *data, size_t len, int upper,
    char *out);
/* Hex of a digest (2n+1 bytes in out). */
void sr_hex(const unsigned char *md, size_t n, char *out, int upper);

#endif
