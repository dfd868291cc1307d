/* sr_outcome.c - what a finished call's outcome is: from the carrier's
 * answer (its verdict, by the profile's rules), or from how the transfer
 * failed.
 *
 * Classification is the heart of "nothing lost, nothing doubled": an error
 * before the request could have reached the carrier is "retry" (definitely
 * not executed); anything after it may have been executed and is "unknown",
 * which sr-confirm resolves with a status query, never with a blind re-call.
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include <curl/curl.h>

#include "sr.h"

const char *
sr_outcome_name(enum sr_outcome o)
{
#define SR_OUT_NAME(e, name) [e] = name,
	static const char *const names[] = { SR_OUTCOMES(SR_OUT_NAME) };
#undef SR_OUT_NAME

	return names[o];
}

void
sr_outcome_transport(struct sr_call *call, CURLcode rc, CURL *e)
{
	curl_off_t pre = 0;

	/* The request went once (libcurl was about to send it: on_prereq) and
	 * what failed came after: libcurl's own retry on a new connection that
	 * could not connect, or the handshake of that one. The carrier may have
	 * applied the first send: a change is unknown, never not_sent (which
	 * gives the card its interval back and calls it again). */
	if (call->sends > 0 && sr_call_is_change(call)) {
		call->outcome = SR_OUT_UNKNOWN;
		return;
	}
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
	/* The carrier's certificate refused (expired, another host's, an
	 * unknown CA, a pinned key that does not match): the TLS handshake
	 * stopped before a byte of the request was sent. Unknown would keep the
	 * card's interval and settle nothing: its status query fails the same. */
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
		call->outcome = SR_OUT_RETRY; /* never reached the carrier */
		call->class = "not_sent";
		return;
	case CURLE_OPERATION_TIMEDOUT:
		curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pre);
		call->outcome = pre == 0 ? SR_OUT_RETRY : SR_OUT_UNKNOWN;
		call->class = pre == 0 ? "not_sent" : NULL;
		return;
	default:
		call->outcome = SR_OUT_UNKNOWN; /* got nothing, reset, partial: may have applied */
	}
}

/* The error of a call libcurl failed, in words that say what happened:
 * libcurl's own name for some of them misleads (a header over its limit is
 * "Out of memory", an answer after a 100 Continue that is not HTTP
 * "Unsupported protocol", as if srq had asked for a wrong scheme). */
void
sr_outcome_transport_error(struct sr_call *call, CURLcode rc)
{
	char *err = call->error;
	size_t n = sizeof call->error;

	if (call->sends > 1 && rc == CURLE_ABORTED_BY_CALLBACK)
		snprintf(err, n, "the connection closed with no answer after the request was sent "
		    "(not sent again)");
	/* While reading the answer's headers, libcurl runs out of memory only
	 * at its limit for one header line (CURL_MAX_HTTP_HEADER): srq's own
	 * allocations end the process when memory runs out. */
	else if (rc == CURLE_OUT_OF_MEMORY && call->sends > 0 && !call->headers_done)
		snprintf(err, n, "response header too long (over libcurl's limit): the answer was "
		    "not read");
	else if ((rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_WEIRD_SERVER_REPLY) &&
	    call->sends > 0) {
		if (call->status_seen && (call->status_seen < 200 || call->status_seen > 599))
			snprintf(err, n, "carrier answered with HTTP status %ld (not a final status), then "
			    "no answer libcurl could read", call->status_seen);
		else
			snprintf(err, n, "carrier answered with no HTTP status line libcurl could read");
	} else
		snprintf(err, n, "%s", curl_easy_strerror(rc));
}

void
sr_outcome_answer(struct sr_call *call)
{
	const struct sr_profile *p = call->edge->acct->p;
	struct sr_answer a;
	enum sr_ask ask = !strcmp(call->action, "status") ? SR_ASK_QUERY :
	    !strcmp(call->action, "poll") ? SR_ASK_POLL : SR_ASK_CHANGE;

	if (call->body_cut) {
		/* Its end was not kept: what it says there (an error after a
		 * padded ok) is unknown, and so is the answer. */
		call->verdict = SR_V_UNKNOWN;
		call->outcome = SR_OUT_UNKNOWN;
		snprintf(call->error, sizeof call->error,
		    "carrier answered HTTP %ld with a body over %d bytes: not read", call->http, SR_BODY_MAX);
		return;
	}
	sr_classify(p, call->http, call->body, call->body_len, ask, call->card, call->txn, &a);
	/* Each field the carrier wrote, redacted on its own: one cut short to
	 * its field's size ends in the start of a secret, which the error put
	 * together from them would carry in its middle, past the check for a
	 * secret cut short at the end. */
	sr_call_redact(call, a.code, sizeof a.code);
	sr_call_redact(call, a.msg, sizeof a.msg);
	sr_call_redact(call, a.card, sizeof a.card);
	call->verdict = a.verdict;
	snprintf(call->observed, sizeof call->observed, "%s", a.observed);
	snprintf(call->raw_state, sizeof call->raw_state, "%s", a.raw_state);
	snprintf(call->order, sizeof call->order, "%s", a.order);
	/* (A poll's txn is the order it asked about, kept.) */
	if (ask != SR_ASK_POLL)
		snprintf(call->txn, sizeof call->txn, "%s", a.txn);
	switch (a.verdict) {
	case SR_V_OK: call->outcome = SR_OUT_OK; break;
	case SR_V_IN_PROGRESS: call->outcome = SR_OUT_OK; call->in_progress = 1; break;
	case SR_V_ALREADY: call->outcome = SR_OUT_ALREADY; break;
	case SR_V_THROTTLE: call->outcome = SR_OUT_RETRY; call->class = "throttled"; break;
	case SR_V_TOO_FREQUENT: call->outcome = SR_OUT_RETRY; call->class = "too_frequent"; break;
	case SR_V_REFUSED: call->outcome = SR_OUT_RETRY; call->class = "refused"; break;
	case SR_V_REAUTH: call->outcome = SR_OUT_RETRY; call->class = "auth"; break;
	case SR_V_FAIL: call->outcome = SR_OUT_FAIL; break;
	default: call->outcome = SR_OUT_UNKNOWN;
	}
	/* What the answer named, believed or not (a probe shows it). */
	snprintf(call->answer_card, sizeof call->answer_card, "%s", a.card);
	if (a.mismatch) {
		/* Not believed: the call may have applied (a change is then
		 * queried), and what a query said is no observation. */
		call->class = "mismatch";
		if (a.mismatch == 2) {
			sr_call_redact(call, a.txn, sizeof a.txn);
			snprintf(call->error, sizeof call->error, a.txn[0] ?
			    "HTTP %ld: the answer is about order %s, not %s" :
			    "HTTP %ld: the answer names no order%s, not %s", call->http, a.txn, call->txn);
		} else if (a.card[0])
			snprintf(call->error, sizeof call->error, "HTTP %ld: the answer is about card %s, not %s",
			    call->http, a.card, call->card);
		else
			snprintf(call->error, sizeof call->error, "HTTP %ld: the answer names no card", call->http);
	} else if (a.unread[0])
		snprintf(call->error, sizeof call->error, "%s", a.unread);
	else if (call->outcome != SR_OUT_OK && call->outcome != SR_OUT_ALREADY)
		snprintf(call->error, sizeof call->error, "HTTP %ld%s%s%s%s", call->http,
		    a.code[0] ? " " : "", a.code, a.msg[0] ? " " : "", a.msg);
	sr_call_redact(call, call->error, sizeof call->error);
	sr_call_redact(call, call->raw_state, sizeof call->raw_state);
	sr_call_redact(call, call->txn, sizeof call->txn);
	sr_call_redact(call, call->answer_card, sizeof call->answer_card);
}
