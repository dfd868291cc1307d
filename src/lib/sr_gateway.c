/* sr_gateway.c - the carrier gateway client: the process's one libcurl
 * multi handle, and each account's side of it (struct sr_edge).
 *
 * The client is in parts: requests are built from the account's profile
 * (sr_request.c, its authentication by the kinds of sr_auth.c), sent by
 * sr_http.c, their outcome read by sr_outcome.c; the pace at the wire is
 * sr_pace.c's (warm connections, setup times) and sr_late.c's (the late
 * send, in Redis).
 *
 * The rate is held at the wire: the client counts the connections to each
 * origin (struct sr_origin), so it knows whether a call goes out on a warm
 * connection (it leaves when it is sent) or must set up a new one first (it
 * leaves up to the connection's setup time later: the gate holds the
 * account's pace that much longer, see sr_edge_spread). One pool, not one per
 * account: per-account pools kept up to --concurrency idle connections for
 * every account, thousands to one carrier, until its server stopped taking
 * new ones and calls timed out.
 *
 * Secrets (tokens, passwords, app secrets) are read from files or the
 * environment when a request is built (sr_secret.c), go into that request
 * only, and are never logged or printed; a URL that carries one is never
 * printed either.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "sr.h"

struct sr_gateway *
sr_gateway_new(const struct sr_config *cfg)
{
	struct sr_gateway *gw = sr_malloc(sizeof *gw);

	memset(gw, 0, sizeof *gw);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(gw->multi = curl_multi_init()))
		sr_die(SR_EX_USAGE, "cannot initialise libcurl");
	gw->cfg = cfg;
	if (curl_multi_setopt(gw->multi, CURLMOPT_MAXCONNECTS, (long)cfg->concurrency) != CURLM_OK)
		sr_die(SR_EX_USAGE, "cannot set up libcurl (CURLMOPT_MAXCONNECTS)");
	return gw;
}

void
sr_gateway_free(struct sr_gateway *gw)
{
	if (!gw)
		return;
	for (int b = 0; b < SR_EDGE_BUCKETS; b++)
		while (gw->edges[b]) {
			struct sr_edge *e = gw->edges[b];

			gw->edges[b] = e->next;
			sr_secrets_free(&e->secrets, &e->nsecrets);
			sr_token_forget(e);
			free(e->fetch);
			e->fetch = NULL;
			free(e->late);
			free(e);
		}
	while (gw->origins) {
		struct sr_origin *o = gw->origins;

		gw->origins = o->next;
		free(o);
	}
	curl_multi_cleanup(gw->multi);
	free(gw->failed);
	free(gw);
	curl_global_cleanup();
}

static uint32_t
edge_bucket(const char *carrier)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *c = (const unsigned char *)carrier; *c; c++)
		h = (h ^ *c) * 16777619u;
	return h % SR_EDGE_BUCKETS;
}

struct sr_edge *
sr_gateway_edge(struct sr_gateway *gw, const char *carrier)
{
	uint32_t h = edge_bucket(carrier);
	struct sr_edge *e;

	for (e = gw->edges[h]; e; e = e->next)
		if (!strcmp(e->acct->id, carrier))
			return e;
	e = sr_malloc(sizeof *e);
	memset(e, 0, sizeof *e);
	e->acct = sr_account(gw->cfg, carrier);
	e->cold_ms = e->acct->connect_budget_ms;
	e->warm_ms = -1;
	e->clock_node = -1;
	e->next = gw->edges[h];
	gw->edges[h] = e;
	return e;
}

struct sr_edge *
sr_gateway_edge_next(struct sr_gateway *gw, struct sr_edge *e)
{
	uint32_t h = 0;

	if (e) {
		if (e->next)
			return e->next;
		h = edge_bucket(e->acct->id) + 1;
	}
	for (; h < SR_EDGE_BUCKETS; h++)
		if (gw->edges[h])
			return gw->edges[h];
	return NULL;
}
