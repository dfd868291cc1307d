/* sr_gateway.c - the carrier gateway client (SPEC section 7), on libcurl's
 * multi interface: many calls in flight, connections kept alive and reused.
 *
 * Classification is the heart of "nothing lost, nothing doubled": an error
 * before the request could have reached the carrier is "retry" (definitely
 * not executed); anything after it may have been executed and is "unknown",
 * which sr-confirm resolves with a status query, never with a blind re-call.
 * The bearer token goes into a header only; it is never logged or printed.
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "sr.h"

#define BODY_MAX (64 * 1024)

struct sr_gateway {
	CURLM *multi;
	const struct sr_config *cfg;
	char *auth; /* "Authorization: Bearer ..." or NULL */
	int running;
};

const char *
sr_outcome_name(enum sr_outcome o)
{
	static const char *names[] = { "ok", "already", "retry", "fail", "unknown", "superseded",
		"blocked" };

	return names[o];
}

struct sr_gateway *
sr_gateway_new(const struct sr_config *cfg)
{
	struct sr_gateway *gw = sr_malloc(sizeof *gw);

	memset(gw, 0, sizeof *gw);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	gw->multi = curl_multi_init();
	gw->cfg = cfg;
	curl_multi_setopt(gw->multi, CURLMOPT_MAXCONNECTS, (long)cfg->concurrency);
	if (cfg->gateway_token) {
		size_t n = strlen(cfg->gateway_token) + 32;

		gw->auth = sr_malloc(n);
		snprintf(gw->auth, n, "Authorization: Bearer %s", cfg->gateway_token);
	}
	return gw;
}

void
sr_gateway_free(struct sr_gateway *gw)
{
	if (!gw)
		return;
	curl_multi_cleanup(gw->multi);
	if (gw->auth) {
		memset(gw->auth, 0, strlen(gw->auth));
		free(gw->auth);
	}
	free(gw);
	curl_global_cleanup();
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *userp)
{
	struct sr_call *call = userp;
	size_t n = size * nmemb, room = BODY_MAX - call->body_len;

	if (n > room)
		n = room; /* keep the start; the rest is not needed to classify */
	call->body = sr_realloc(call->body, call->body_len + n + 1);
	memcpy(call->body + call->body_len, data, n);
	call->body_len += n;
	call->body[call->body_len] = '\0';
	return size * nmemb;
}

static size_t
on_read(char *buf, size_t size, size_t nitems, void *userp)
{
	struct sr_call *call = userp;
	size_t left = strlen(call->reqbody) - call->reqoff, n = size * nitems;

	if (n > left)
		n = left;
	memcpy(buf, call->reqbody + call->reqoff, n);
	call->reqoff += n;
	return n;
}

void
sr_gateway_start(struct sr_gateway *gw, struct sr_call *call)
{
	CURL *e = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[512], hdr[160];
	int is_query = strcmp(call->action, "status") == 0;

	call->body = NULL;
	call->body_len = 0;
	call->error[0] = call->observed[0] = '\0';
	call->http = 0;
	call->retry_after_ms = 0;
	call->started = sr_mono_ms();
	if (is_query)
		snprintf(url, sizeof url, "%s/v1/cards/%s/status?carrier=%s", gw->cfg->gateway,
		    call->card, call->carrier);
	else {
		/* Same intent, same key: card + version + action, nothing random. */
		char reqid[160];

		snprintf(reqid, sizeof reqid, "%s-%lld-%s", call->card, call->ver, call->action);
		snprintf(url, sizeof url, "%s/v1/cards/%s/%s", gw->cfg->gateway, call->card,
		    call->action);
		snprintf(call->reqbody, sizeof call->reqbody,
		    "{\"carrier\":\"%s\",\"request_id\":\"%s\"}", call->carrier, reqid);
		snprintf(hdr, sizeof hdr, "Idempotency-Key: %s", reqid);
		h = curl_slist_append(h, hdr);
		h = curl_slist_append(h, "Content-Type: application/json");
		/* The body is handed to libcurl by a read callback with no way to
		 * rewind: when a kept-alive connection dies before any byte of the
		 * answer, libcurl would silently re-send the request on a new
		 * connection (a carrier that applied the first would see the change
		 * twice). Unable to rewind, it fails the transfer instead
		 * (CURLE_SEND_FAIL_REWIND), which is classified unknown and settled
		 * by a status query. Connections stay pooled and kept alive. */
		call->reqoff = 0;
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(call->reqbody));
		curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(e, CURLOPT_READDATA, call);
	}
	if (gw->auth)
		h = curl_slist_append(h, gw->auth);
	h = curl_slist_append(h, "Expect:");
	call->headers = h;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "srq/" SR_VERSION);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, gw->cfg->gw_timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, gw->cfg->gw_connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, call);
	curl_easy_setopt(e, CURLOPT_PRIVATE, call);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	call->easy = e;
	curl_multi_add_handle(gw->multi, e);
	gw->running++;
}

int
sr_gateway_running(struct sr_gateway *gw)
{
	return gw->running;
}

void
sr_gateway_poll(struct sr_gateway *gw, int timeout_ms, int extra_fd)
{
	struct curl_waitfd wfd = { extra_fd, CURL_WAIT_POLLIN, 0 };
	int still;

	curl_multi_perform(gw->multi, &still);
	curl_multi_wait(gw->multi, extra_fd >= 0 ? &wfd : NULL, extra_fd >= 0 ? 1 : 0, timeout_ms,
	    NULL);
	curl_multi_perform(gw->multi, &still);
}

/* Pull the "code" (calls) or "status" (queries) string out of a JSON body. */
static int
body_field(const char *body, const char *field, char *out, size_t outlen)
{
	json_t *j = body ? json_loads(body, 0, NULL) : NULL;
	const char *s = j ? sr_jstr(j, field) : NULL;
	int ok = s && strlen(s) < outlen;

	if (ok)
		strcpy(out, s);
	json_decref(j);
	return ok;
}

enum sr_outcome
sr_classify_http(long http, const char *body, int is_query, char *observed, size_t observed_len)
{
	char code[32] = "";

	if (is_query) {
		if (http == 200 && body_field(body, "status", observed, observed_len) &&
		    (!strcmp(observed, "active") || !strcmp(observed, "stopped")))
			return SR_OUT_OK;
		observed[0] = '\0';
		if (http == 429)
			return SR_OUT_RETRY;
		if (http >= 400 && http < 500)
			return SR_OUT_FAIL;
		return SR_OUT_UNKNOWN;
	}
	body_field(body, "code", code, sizeof code);
	if ((http == 200 || http == 409) && !strcmp(code, "ALREADY"))
		return SR_OUT_ALREADY;
	if (http == 200 && !strcmp(code, "OK"))
		return SR_OUT_OK;
	if (http == 429 || (http == 409 && !strcmp(code, "TOO_FREQUENT")))
		return SR_OUT_RETRY;
	if (http >= 400 && http < 500)
		return SR_OUT_FAIL;
	return SR_OUT_UNKNOWN; /* 5xx, or a 2xx we cannot read: may have applied */
}

static enum sr_outcome
classify_transport(CURLcode rc, CURL *e)
{
	curl_off_t pre = 0;

	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
		return SR_OUT_RETRY; /* never reached the carrier */
	case CURLE_OPERATION_TIMEDOUT:
		curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pre);
		return pre == 0 ? SR_OUT_RETRY : SR_OUT_UNKNOWN;
	default:
		return SR_OUT_UNKNOWN; /* got nothing, reset, partial: may have applied */
	}
}

struct sr_call *
sr_gateway_done(struct sr_gateway *gw)
{
	int left;
	CURLMsg *m;

	while ((m = curl_multi_info_read(gw->multi, &left))) {
		struct sr_call *call;
		CURL *e = m->easy_handle;
		int is_query;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&call);
		is_query = strcmp(call->action, "status") == 0;
		call->ms = sr_mono_ms() - call->started;
		if (m->data.result == CURLE_OK) {
			curl_off_t ra = 0;

			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &call->http);
			call->outcome = sr_classify_http(call->http, call->body, is_query,
			    call->observed, sizeof call->observed);
			if (call->outcome != SR_OUT_OK && call->outcome != SR_OUT_ALREADY) {
				char code[32] = "";

				body_field(call->body, "code", code, sizeof code);
				snprintf(call->error, sizeof call->error, "HTTP %ld%s%s", call->http,
				    code[0] ? " " : "", code);
			}
			if (curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
				call->retry_after_ms = (ra > 3600 ? 3600 : ra) * 1000;
		} else {
			call->outcome = classify_transport(m->data.result, e);
			snprintf(call->error, sizeof call->error, "%s",
			    curl_easy_strerror(m->data.result));
		}
		curl_multi_remove_handle(gw->multi, e);
		curl_easy_cleanup(e);
		curl_slist_free_all(call->headers);
		call->headers = NULL;
		free(call->body);
		call->body = NULL;
		call->easy = NULL;
		gw->running--;
		return call;
	}
	return NULL;
}
