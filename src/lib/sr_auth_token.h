/* sr_auth_token.h - the API of sr_auth_token.c: a fetched token. */
#ifndef SR_AUTH_TOKEN_H
#define SR_AUTH_TOKEN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include <curl/curl.h>

#include "sr_gateway.h"

/* Authentication: 1 ready, 0 waiting for a token (its fetch is started:
 * one for every waiting call), -1 failed (e->auth_error). */
int sr_edge_ready(struct sr_gateway *gw, struct sr_edge *e);
/* The carrier refused a call sent with authentication gen: re-authenticate
 * (secret files read again, a new token fetched), once for every call in
 * flight with that gen. */
void sr_edge_reauth(struct sr_edge *e, int gen);
/* Forget the account's token (wiped). */
void sr_token_forget(struct sr_edge *e);
/* The account's token fetch finished (rc, its status http): the token
 * kept, or the authentication failed for a while (e->auth_error). */
void sr_token_fetched(struct sr_edge *e, CURLcode rc, long http);

/* The token of a token fetch's answer (token.field, not empty) and how long
 * it lives in s (token.ttl_field, else token.ttl_s, else 1800). 1 when the
 * answer holds one. */
int sr_token_read(const struct sr_profile *p, json_t *j, const char *body, char *tok, size_t toklen,
    long *ttl_s);

#endif
