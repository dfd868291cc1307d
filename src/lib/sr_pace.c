/* sr_pace.c - how much later than its slot a call leaves: the connections
 * known alive to each origin (warm: it leaves when sent), and what new
 * ones cost to set up (learned from each call's timings), which the gate
 * adds to the account's pace (sr_edge_spread).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "sr.h"

/* ------------------------------------------------------------ warm connections */

/* The origin of a URL, "scheme://authority", as libcurl's pool tells its
 * connections apart (a URL is not parsed further: the origin only names). */
struct sr_origin *
sr_origin_of(struct sr_gateway *gw, const char *url)
{
	const char *sep = strstr(url, "://");
	size_t n = sep ? (size_t)(sep - url) + 3 + strcspn(sep + 3, "/?#") : strlen(url);
	struct sr_origin *o;

	if (n >= sizeof o->name)
		n = sizeof o->name - 1;
	for (o = gw->origins; o; o = o->next)
		if (!strncmp(o->name, url, n) && !o->name[n])
			return o;
	o = sr_malloc(sizeof *o);
	memset(o, 0, sizeof *o);
	memcpy(o->name, url, n);
	o->next = gw->origins;
	gw->origins = o;
	return o;
}

static void
conn_used(struct sr_origin *o, long port, int64_t now)
{
	int i, oldest = 0;

	for (i = 0; i < o->nconns; i++)
		if (o->conns[i].port == port)
			break;
	if (i == o->nconns) {
		if (o->nconns < SR_ORIGIN_CONNS)
			i = o->nconns++;
		else {
			for (int k = 1; k < o->nconns; k++)
				if (o->conns[k].used < o->conns[oldest].used)
					oldest = k;
			i = oldest;
		}
	}
	o->conns[i].port = port;
	o->conns[i].used = now;
}

static void
conn_closed(struct sr_origin *o, long port)
{
	for (int i = 0; i < o->nconns; i++)
		if (o->conns[i].port == port) {
			o->conns[i] = o->conns[--o->nconns];
			return;
		}
}

long
sr_edge_spread(struct sr_edge *e)
{
	struct sr_origin *o = e->origin;
	int64_t now = sr_mono_ms();
	int warm = 0;

	if (!o)
		return e->cold_ms;
	for (int i = 0; i < o->nconns; i++)
		warm += now - o->conns[i].used < e->acct->keepalive_ms;
	/* Each running call holds one of them; only the rest are idle. */
	return warm > o->running ? 0 : e->cold_ms;
}

/* What the call's timings teach about the account's connections. */
void
sr_pace_learn(struct sr_edge *ed, struct sr_call *call, CURL *e)
{
	long port = 0, news = 0;
	curl_off_t pre = 0, ttfb = 0;
	int64_t now = sr_mono_ms();

	curl_easy_getinfo(e, CURLINFO_LOCAL_PORT, &port);
	curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &news);
	curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pre);
	curl_easy_getinfo(e, CURLINFO_STARTTRANSFER_TIME_T, &ttfb);
	call->cold = news > 0;
	if (port > 0) {
		if (call->conn_close)
			conn_closed(call->origin, port);
		else
			conn_used(call->origin, port, now);
	}
	if (ttfb <= 0)
		return;
	if (!call->cold) {
		/* The answer time of a warm call: the carrier's own latency. */
		long warm = (long)((ttfb - pre) / 1000);

		if (ed->warm_ms < 0 || warm < ed->warm_ms)
			ed->warm_ms = warm;
	} else {
		/* A new connection's setup: what libcurl saw (TCP, TLS), or, when a
		 * carrier sets it up lazily, the extra answer time it cost. Once a
		 * few are known, the pace charges the longest of the last ones and
		 * a quarter more (the profile's connect_budget_ms until then), so a
		 * quick carrier is not charged a slow one's setup. */
		long setup = (long)(pre / 1000), extra = (long)(ttfb / 1000) - ed->warm_ms;
		long most = 0;

		if (ed->warm_ms >= 0 && extra > setup)
			setup = extra;
		ed->setups[ed->nsetups++ % SR_EDGE_SETUPS] = setup < 10000 ? setup : 10000;
		for (int i = 0; i < SR_EDGE_SETUPS && i < ed->nsetups; i++)
			if (ed->setups[i] > most)
				most = ed->setups[i];
		if (ed->nsetups >= 3)
			ed->cold_ms = most + most / 4 + 1;
	}
}
