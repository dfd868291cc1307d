/* sr_http.c - the HTTP client, on libcurl's multi interface: many calls
 * in flight over one pool of kept-alive connections (see sr_gateway.c),
 * each request as sr_request.c builds it, sent once when it is a change.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "sr.h"

static size_t
on_body(char *data, size_t size, size_t nmemb, void *userp)
{
	struct sr_call *call = userp;
	size_t n = size * nmemb, room = SR_BODY_MAX - call->body_len;

	if (n > room) {
		n = room; /* keep the start; the answer is not read (classify) */
		call->body_cut = 1;
	}
	call->body = sr_realloc(call->body, call->body_len + n + 1);
	memcpy(call->body + call->body_len, data, n);
	call->body_len += n;
	call->body[call->body_len] = '\0';
	return size * nmemb;
}

/* Each header line of the answer, its status line and the empty line
 * that ends its headers included (once per answer: a 100 Continue has its
 * own). */
static size_t
on_header(char *data, size_t size, size_t nmemb, void *userp)
{
	struct sr_call *call = userp;
	size_t n = size * nmemb;

	if (n > 5 && !strncmp(data, "HTTP/", 5)) {
		const char *sp = memchr(data, ' ', n);

		call->status_seen = sp ? strtol(sp + 1, NULL, 10) : 0;
		call->headers_done = 0;
	} else if ((n == 2 && data[0] == '\r' && data[1] == '\n') || (n == 1 && data[0] == '\n'))
		call->headers_done = 1;
	if (n >= 17 && !strncasecmp(data, "connection:", 11)) {
		const char *v = data + 11;

		while (*v == ' ')
			v++;
		if (!strncasecmp(v, "close", 5))
			call->conn_close = 1;
	}
	return n;
}

static size_t
on_read(char *buf, size_t size, size_t nitems, void *userp)
{
	struct sr_call *call = userp;
	size_t left = call->reqlen - call->reqoff, n = size * nitems;

	if (n > left)
		n = left;
	memcpy(buf, call->reqbody + call->reqoff, n);
	call->reqoff += n;
	return n;
}

/* Called by libcurl right before each time it sends the request. When a
 * kept-alive connection dies before any byte of the answer, libcurl sends
 * the request again on a new connection by itself, unless it would have to
 * rewind a body (see sr_http_start). A change with no body to rewind (a GET, or an
 * empty POST or PUT, as some carriers' APIs are) would go out twice: the
 * carrier may have applied the first, and the second is paced by no gate.
 * So a change is sent once: a second send is aborted, and the call is
 * unknown (settled by a status query). A query or a token fetch may go
 * again: it changes nothing. */
/* A stop or resume: what a second send could apply twice. */
int
sr_call_is_change(const struct sr_call *call)
{
	return !call->is_fetch && (!strcmp(call->action, "stop") || !strcmp(call->action, "resume"));
}

static int
on_prereq(void *userp, char *ip, char *local_ip, int remote_port, int local_port)
{
	struct sr_call *call = userp;

	(void)ip;
	(void)local_ip;
	(void)remote_port;
	(void)local_port;
	if (++call->sends > 1 && sr_call_is_change(call))
		return CURL_PREREQFUNC_ABORT;
	return CURL_PREREQFUNC_OK;
}

/* A call that never reached the wire, for a reason of ours. */
void
sr_http_fail_now(struct sr_gateway *gw, struct sr_call *call, const char *cls, const char *error)
{
	call->outcome = SR_OUT_RETRY;
	call->class = cls;
	if (error)
		snprintf(call->error, sizeof call->error, "%s", error);
	if (gw->nfailed == gw->capfailed) {
		gw->capfailed = gw->capfailed ? gw->capfailed * 2 : 16;
		gw->failed = sr_realloc(gw->failed, (size_t)gw->capfailed * sizeof *gw->failed);
	}
	gw->failed[gw->nfailed++] = call;
}

/* A header appended, or the end: libcurl returns NULL (and keeps the list)
 * only when out of memory. */
static struct curl_slist *
slist_add(struct curl_slist *h, const char *s)
{
	struct curl_slist *n = curl_slist_append(h, s);

	if (!n)
		sr_die(SR_EX_BACKEND, "out of memory building a request");
	return n;
}

#define SETOPT(e, opt, val) do { if (curl_easy_setopt(e, opt, val) != CURLE_OK) goto setopt_failed; } while (0)

/* Build and start one transfer: a call (call->action stop, resume or
 * status) or the account's token fetch (call->is_fetch). */
int
sr_http_start(struct sr_gateway *gw, struct sr_edge *ed, struct sr_call *call)
{
	const struct sr_profile *p = ed->acct->p;
	int r = call->is_fetch ? SR_REQ_TOKEN : !strcmp(call->action, "status") ? SR_REQ_QUERY :
	    !strcmp(call->action, "poll") ? SR_REQ_POLL :
	    !strcmp(call->action, "stop") ? SR_REQ_STOP : SR_REQ_RESUME;
	const struct sr_request_tmpl *t = &p->req[r];
	char url[SR_REQ_MAX], body[SR_REQ_MAX];
	struct sr_buf ub = { url, 0, sizeof url }, bb = { body, 0, sizeof body };
	struct sr_build b;
	struct sr_request req;
	struct curl_slist *h = NULL;
	CURL *e;
	int built;

	sr_build_init(&b, gw, ed, call->is_fetch ? NULL : call, call->is_fetch ? "token" : call->action);
	sr_call_forget_secrets(call);
	b.rec = call;
	if ((built = sr_build_request(&b, t, &ub, &bb)) != SR_BUILT) {
		snprintf(call->error, sizeof call->error, "request not %s: %s",
		    built == SR_NOT_SIGNED ? "signed" : "built", b.err);
		return -1;
	}
	memset(&req, 0, sizeof req);
	if (sr_build_headers(&b, &req) < 0) {
		snprintf(call->error, sizeof call->error, "%s: %s",
		    b.what ? b.what : "request not built", b.err);
		sr_request_free(&req);
		return -1;
	}
	for (int i = 0; i < req.nheaders; i++)
		h = slist_add(h, req.headers[i]);
	sr_request_free(&req);
	if (t->body && t->type == SR_BODY_JSON)
		h = slist_add(h, "Content-Type: application/json");
	else if (t->body && t->type == SR_BODY_FORM)
		h = slist_add(h, "Content-Type: application/x-www-form-urlencoded");
	h = slist_add(h, "Expect:");
	call->headers = h;
	call->body = NULL;
	call->body_len = 0;
	call->body_cut = 0;
	call->conn_close = 0;
	call->sends = 0;
	call->status_seen = 0;
	call->headers_done = 0;
	call->started = sr_mono_ms();
	call->auth_gen = ed->auth_gen;
	if (!(e = curl_easy_init())) {
		snprintf(call->error, sizeof call->error, "libcurl: out of memory");
		return -1;
	}
	call->easy = e;
	call->origin = sr_origin_of(gw, url);
	if (!call->is_fetch)
		ed->origin = call->origin;
	SETOPT(e, CURLOPT_URL, url);
	SETOPT(e, CURLOPT_HTTPHEADER, h);
	SETOPT(e, CURLOPT_USERAGENT, "srq/" SR_VERSION);
	SETOPT(e, CURLOPT_NOSIGNAL, 1L);
	SETOPT(e, CURLOPT_TIMEOUT_MS, ed->acct->timeout_ms);
	SETOPT(e, CURLOPT_CONNECTTIMEOUT_MS, ed->acct->connect_timeout_ms);
	/* A connection idle longer than this is not reused: the carrier may
	 * have closed it, and a request on a dying connection may be lost. */
	SETOPT(e, CURLOPT_MAXAGE_CONN, (ed->acct->keepalive_ms + 999) / 1000);
	SETOPT(e, CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(e, CURLOPT_WRITEDATA, call);
	SETOPT(e, CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(e, CURLOPT_HEADERDATA, call);
	SETOPT(e, CURLOPT_PRIVATE, call);
	SETOPT(e, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(e, CURLOPT_PREREQFUNCTION, on_prereq);
	SETOPT(e, CURLOPT_PREREQDATA, call);
	if (strcmp(t->method, "GET")) {
		/* The body is handed to libcurl by a read callback with no way to
		 * rewind: when a kept-alive connection dies before any byte of the
		 * answer, libcurl would silently re-send the request on a new
		 * connection (a carrier that applied the first would see the change
		 * twice). Unable to rewind, it fails the transfer instead
		 * (CURLE_SEND_FAIL_REWIND), which is classified unknown and settled
		 * by a status query. */
		call->reqlen = sr_sends_body(t) ? bb.len : 0;
		call->reqbody = sr_malloc(call->reqlen + 1);
		memcpy(call->reqbody, body, call->reqlen);
		call->reqoff = 0;
		SETOPT(e, CURLOPT_READFUNCTION, on_read);
		SETOPT(e, CURLOPT_READDATA, call);
		if (!strcmp(t->method, "POST")) {
			SETOPT(e, CURLOPT_POST, 1L);
			SETOPT(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)call->reqlen);
		} else {
			SETOPT(e, CURLOPT_UPLOAD, 1L);
			SETOPT(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)call->reqlen);
			if (strcmp(t->method, "PUT"))
				SETOPT(e, CURLOPT_CUSTOMREQUEST, t->method);
		}
	}
	if (sr_build_creds(&b, &req) < 0) {
		snprintf(call->error, sizeof call->error, "%s: %s",
		    b.what ? b.what : "request not built", b.err);
		return -1;
	}
	if (req.basic) {
		SETOPT(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		SETOPT(e, CURLOPT_USERNAME, req.user);
		SETOPT(e, CURLOPT_PASSWORD, req.password);
		sr_request_free(&req);
	}
	memset(url, 0, sizeof url); /* it may carry a token */
	memset(body, 0, sizeof body);
	if (curl_multi_add_handle(gw->multi, e) != CURLM_OK) {
		snprintf(call->error, sizeof call->error, "libcurl: cannot start the transfer");
		return -1;
	}
	gw->running++;
	ed->running++;
	call->origin->running++;
	return 0;
setopt_failed:
	sr_request_free(&req);
	snprintf(call->error, sizeof call->error, "libcurl refused an option");
	return -1;
}

void
sr_call_cleanup(struct sr_call *call)
{
	if (call->easy)
		curl_easy_cleanup(call->easy);
	call->easy = NULL;
	curl_slist_free_all(call->headers);
	call->headers = NULL;
	free(call->body);
	call->body = NULL;
	if (call->reqbody)
		memset(call->reqbody, 0, call->reqlen);
	free(call->reqbody);
	call->reqbody = NULL;
	sr_call_forget_secrets(call);
}

void
sr_gateway_start(struct sr_gateway *gw, struct sr_call *call)
{
	struct sr_edge *ed = sr_gateway_edge(gw, call->carrier);

	call->edge = ed;
	call->error[0] = call->observed[0] = call->raw_state[0] = call->order[0] = '\0';
	call->answer_card[0] = '\0';
	if (strcmp(call->action, "poll")) /* (a poll's is the order it asks about) */
		call->txn[0] = '\0';
	call->http = 0;
	call->retry_after_ms = 0;
	call->class = NULL;
	call->in_progress = 0;
	call->verdict = -1;
	call->ms = 0;
	call->is_fetch = 0;
	call->local_fail = 0;
	if (sr_http_start(gw, ed, call) < 0) {
		/* (a profile's secret unset or unreadable, a signature that
		 * failed: the configuration's fault, not the gateway's) */
		sr_call_cleanup(call);
		call->local_fail = 1;
		sr_http_fail_now(gw, call, "not_sent", NULL);
	}
}

/* ------------------------------------------------------------ running */

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

	if (gw->nfailed)
		timeout_ms = 0;
	curl_multi_perform(gw->multi, &still);
	curl_multi_wait(gw->multi, extra_fd >= 0 ? &wfd : NULL, extra_fd >= 0 ? 1 : 0, timeout_ms,
	    NULL);
	curl_multi_perform(gw->multi, &still);
}

struct sr_call *
sr_gateway_done(struct sr_gateway *gw)
{
	int left;
	CURLMsg *m;

	if (gw->nfailed) {
		struct sr_call *c = gw->failed[0];

		memmove(gw->failed, gw->failed + 1, (size_t)--gw->nfailed * sizeof *gw->failed);
		return c;
	}
	while ((m = curl_multi_info_read(gw->multi, &left))) {
		struct sr_call *call;
		struct sr_edge *ed;
		CURL *e = m->easy_handle;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&call);
		ed = call->edge;
		curl_multi_remove_handle(gw->multi, e);
		gw->running--;
		ed->running--;
		call->origin->running--;
		call->ms = sr_mono_ms() - call->started;
		sr_pace_learn(ed, call, e);
		if (call->is_fetch) {
			long http = 0;

			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &http);
			sr_token_fetched(ed, m->data.result, http);
			continue;
		}
		if (m->data.result == CURLE_OK) {
			curl_off_t ra = 0;

			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &call->http);
			sr_outcome_answer(call);
			if (curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
				call->retry_after_ms = (ra > 3600 ? 3600 : ra) * 1000;
		} else {
			sr_outcome_transport(call, m->data.result, e);
			sr_outcome_transport_error(call, m->data.result);
		}
		sr_call_cleanup(call);
		return call;
	}
	return NULL;
}
