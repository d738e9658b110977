/*
 * The MPA startup of the connection manager (src/cm/cm.c) as a
 * responder, fed arbitrary octets by a raw TCP peer on 127.0.0.1.  A
 * listener with a short startup timeout runs in this process (its
 * progress thread reads the Request); the peer connects, writes the
 * input and, for a frame still incomplete, may half-close.  What must
 * happen is decided by a reference reading of RFC 5044 §7.1.1-§7.1.2
 * and RFC 6581 §6, §9:
 *  - a valid Request (key "MPA ID Req Frame", PD_Length <= 512, exactly
 *    20 + PD_Length octets and nothing after them, revision 1 or 2, and
 *    with the enhanced-setup bit of revision 2 at least 4 octets of
 *    private data): one CONNECT_REQUEST whose revision, C and M flags,
 *    IRD/ORD field and private data (without the 4 octets of the field)
 *    are the Request's; then the application rejects (a Reply with R,
 *    then the close) or accepts (a Reply without R in the Request's
 *    revision, with the field exactly when the Request had it,
 *    ESTABLISHED, and DISCONNECTED once the peer hangs up);
 *  - anything else: the connection is closed without a Reply and no
 *    event is raised, never a hang (a prefix of a valid Request closes
 *    at the peer's FIN or at the startup timeout).
 * Every wait has a 5 s limit; exceeding it is a finding.
 *
 * Input: mode(1), then the octets the peer sends (at most 600).
 *   mode 0x01: accept a valid Request (else reject); 0x02: half-close
 *   after writing (only for inputs that are not a valid Request);
 *   0x04: write in two parts at the octet (mode >> 3) * 8
 */
#include "fuzz.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uiwarp/uiwarp.h>
#include "wire/mpa.h"

#define WAIT_MS 5000
#define STARTUP_MS 20

static struct {
	struct uiw_device *dev;
	struct uiw_cm_channel *ch;
	struct uiw_cm_id *listener;
	struct uiw_pd *pd;
	struct uiw_cq *cq;
	struct sockaddr_in addr;
} G;

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void setup(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sockaddr_storage ss;

	G.dev = uiw_device_open("fuzzcm");
	FZ_CHECK(G.dev, "device_open: %s", uiw_last_error());
	G.ch = uiw_cm_channel_create(G.dev);
	FZ_CHECK(G.ch, "channel: %s", uiw_last_error());
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	FZ_CHECK(uiw_cm_listen(G.ch, (struct sockaddr *)&a, sizeof(a), 16,
			       &G.listener) == 0, "listen: %s",
		 uiw_last_error());
	FZ_CHECK(uiw_cm_set_startup_timeout(G.listener, STARTUP_MS) == 0,
		 "startup timeout: %s", uiw_last_error());
	FZ_CHECK(uiw_cm_local_addr(G.listener, &ss) == 0, "local addr");
	memcpy(&G.addr, &ss, sizeof(G.addr));
	G.pd = uiw_pd_alloc(G.dev);
	G.cq = uiw_cq_create(G.dev, 16);
	FZ_CHECK(G.pd && G.cq, "pd/cq: %s", uiw_last_error());
}

/* RFC 5044 §7.1.1, RFC 6581 §6: 1 valid, 0 a prefix of what may still
 * become valid, -1 invalid. */
static int ref_request(const uint8_t *b, size_t n)
{
	static const char key[] = "MPA ID Req Frame";
	size_t k = n < 16 ? n : 16, pd;

	if (memcmp(b, key, k))
		return -1;
	if (n < 20)
		return 0;
	pd = ref_be16(b + 18);
	if (pd > 512)
		return -1;
	/* Rev: this responder speaks 1 and 2 */
	if (b[17] < 1 || b[17] > 2)
		return -1;
	if (n < 20 + pd)
		return 0;
	/* §7.1.2 rule 2: the initiator waits for the Reply */
	if (n > 20 + pd)
		return -1;
	if (b[17] >= 2 && (b[16] & 0x10) && pd < 4)
		return -1;
	return 1;
}

static int peer_connect(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	FZ_CHECK(fd >= 0, "socket: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&G.addr, sizeof(G.addr)) < 0) {
		/* libFuzzer's SIGALRM (-timeout) interrupts system calls:
		 * the connection then completes on its own */
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int64_t end = mono_ms() + WAIT_MS;
		socklen_t l = sizeof(one);

		FZ_CHECK(errno == EINTR, "connect: %s", strerror(errno));
		while (poll(&p, 1, (int)(end - mono_ms())) < 0 &&
		       errno == EINTR && mono_ms() < end)
			;
		FZ_CHECK(getsockopt(fd, SOL_SOCKET, SO_ERROR, &one, &l) == 0 &&
			 one == 0, "connect: %s", strerror(one));
	}
	return fd;
}

static void put(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		/* the responder may have closed already */
		if (r <= 0)
			return;
		p += r;
		n -= (size_t)r;
	}
}

/* Reads up to cap octets until EOF/reset; returns the count, and in
 * *closed whether the connection ended. */
static size_t take(int fd, uint8_t *b, size_t cap, size_t want, bool *closed)
{
	size_t n = 0;

	*closed = false;
	while (n < want || want == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t end = mono_ms() + WAIT_MS;
		int r;
		ssize_t g;

		/* EINTR: libFuzzer's SIGALRM; wait on to the same end */
		while ((r = poll(&p, 1, (int)(end - mono_ms()))) < 0 &&
		       errno == EINTR && mono_ms() < end)
			;
		FZ_CHECK(r == 1, "the responder neither answered nor closed "
			 "within %d ms (%zu octets so far)", WAIT_MS, n);
		g = recv(fd, b + n, cap - n, 0);
		if (g < 0 && errno == EINTR)
			continue;
		if (g <= 0) {
			*closed = true;
			break;
		}
		n += (size_t)g;
		FZ_CHECK(n <= cap, "more than %zu octets from the responder",
			 cap);
	}
	return n;
}

static struct uiw_cm_event next_event(const char *what)
{
	struct uiw_cm_event ev;
	int64_t end = mono_ms() + WAIT_MS;
	int r;

	while ((r = uiw_cm_get_event(G.ch, &ev, (int)(end - mono_ms()))) ==
	       -EINTR && mono_ms() < end)
		;

	FZ_CHECK(r == 0, "no event while waiting for %s: %d", what, r);
	return ev;
}

static void check_reply(const uint8_t *rq, const uint8_t *b, size_t n,
			bool reject)
{
	bool enh = rq[17] >= 2 && (rq[16] & 0x10);

	FZ_CHECK(n >= 20 && !memcmp(b, "MPA ID Rep Frame", 16),
		 "Reply of %zu octets without the Reply key", n);
	FZ_CHECK(!!(b[16] & 0x20) == reject, "Reply R bit %d, %s",
		 !!(b[16] & 0x20), reject ? "rejected" : "accepted");
	/* RFC 6581 §10: in the revision and format of the Request */
	FZ_CHECK(b[17] == rq[17], "Reply revision %u to a Request of %u",
		 b[17], rq[17]);
	FZ_CHECK(!!(b[16] & 0x10) == enh && n == 20u + ref_be16(b + 18) &&
		 (!enh || ref_be16(b + 18) >= 4),
		 "Reply format: enhanced bit %d (Request %d), PD_Length %u, "
		 "%zu octets", !!(b[16] & 0x10), enh, ref_be16(b + 18), n);
	/* B, C, D only with A (RFC 6581 §9.2) */
	FZ_CHECK(!enh || (b[20] & 0x80) || ((b[20] & 0x40) == 0 &&
					    (b[22] & 0xc0) == 0),
		 "Reply sets B/C/D without A");
	if (enh && !reject)
		FZ_CHECK(!!(b[20] & 0x80) == !!(rq[20] & 0x80),
			 "Reply A %d to Request A %d", !!(b[20] & 0x80),
			 !!(rq[20] & 0x80));
}

static void valid(int fd, const uint8_t *rq, size_t n, bool acc)
{
	bool enh = rq[17] >= 2 && (rq[16] & 0x10), closed;
	size_t pd = ref_be16(rq + 18), skip = enh ? 4 : 0;
	struct uiw_cm_event ev = next_event("CONNECT_REQUEST");
	struct uiw_cm_id *id = ev.id;
	struct uiw_qp_init_attr qa;
	struct uiw_qp *qp = NULL;
	uint8_t b[600];
	size_t got;

	FZ_CHECK(ev.type == UIW_CM_EVENT_CONNECT_REQUEST &&
		 ev.listen_id == G.listener && id,
		 "event %s for a valid Request", uiw_cm_event_str(ev.type));
	FZ_CHECK(ev.mpa.rev == rq[17] && !!ev.mpa.peer_crc == !!(rq[16] & 0x40)
		 && !!ev.mpa.peer_markers == !!(rq[16] & 0x80) &&
		 !!ev.mpa.enhanced == enh,
		 "CONNECT_REQUEST rev %u crc %d markers %d enhanced %d for "
		 "flags %#x rev %u", ev.mpa.rev, ev.mpa.peer_crc, ev.mpa.peer_markers,
		 ev.mpa.enhanced, rq[16], rq[17]);
	FZ_CHECK(ev.private_data_len == pd - skip &&
		 (!ev.private_data_len ||
		  !memcmp(ev.private_data, rq + 20 + skip,
			  ev.private_data_len)),
		 "private data of %u octets, the Request has %zu",
		 ev.private_data_len, pd - skip);
	if (enh)
		FZ_CHECK(ev.peer_ird == (ref_be16(rq + 20) & 0x3fff) &&
			 ev.peer_ord == (ref_be16(rq + 22) & 0x3fff) &&
			 !!ev.peer_p2p == !!(rq[20] & 0x80),
			 "peer IRD %u ORD %u A %d from %02x%02x %02x%02x",
			 ev.peer_ird, ev.peer_ord, ev.peer_p2p, rq[20], rq[21],
			 rq[22], rq[23]);

	if (acc) {
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = qa.recv_cq = G.cq;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		qp = uiw_qp_create(G.pd, &qa);
		FZ_CHECK(qp, "qp_create: %s", uiw_last_error());
		FZ_CHECK(uiw_cm_accept(id, qp, NULL) == 0, "accept: %s",
			 uiw_last_error());
	} else {
		FZ_CHECK(uiw_cm_reject(id, NULL, 0) == 0, "reject: %s",
			 uiw_last_error());
	}
	got = take(fd, b, sizeof(b), acc ? 20 : 0, &closed);
	if (acc && got >= 20 && got < 20u + ref_be16(b + 18))
		got += take(fd, b + got, sizeof(b) - got,
			    ref_be16(b + 18) + 20 - got, &closed);
	check_reply(rq, b, got, !acc);
	if (!acc) {
		FZ_CHECK(closed, "no close after the rejecting Reply");
		FZ_CHECK(uiw_cm_destroy_id(id) == 0, "destroy_id: %s",
			 uiw_last_error());
		return;
	}
	ev = next_event("ESTABLISHED");
	FZ_CHECK(ev.type == UIW_CM_EVENT_ESTABLISHED && ev.id == id,
		 "event %s after accept", uiw_cm_event_str(ev.type));
	close(fd);
	ev = next_event("DISCONNECTED");
	FZ_CHECK(ev.type == UIW_CM_EVENT_DISCONNECTED && ev.id == id,
		 "event %s after the peer hung up", uiw_cm_event_str(ev.type));
	FZ_CHECK(uiw_cm_destroy_id(id) == 0, "destroy_id: %s",
		 uiw_last_error());
	FZ_CHECK(uiw_qp_destroy(qp) == 0, "qp_destroy: %s", uiw_last_error());
	(void)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct uiw_cm_event ev;
	uint8_t mode, b[600];
	size_t n, cut;
	bool closed;
	int fd, want, r;

	if (!G.dev)
		setup();
	if (!size)
		return 0;
	mode = data[0];
	n = size - 1 < sizeof(b) ? size - 1 : sizeof(b);
	memcpy(b, data + 1, n);
	want = ref_request(b, n);

	fd = peer_connect();
	cut = (size_t)(mode >> 3) * 8;
	if ((mode & 0x04) && cut < n) {
		put(fd, b, cut);
		put(fd, b + cut, n - cut);
	} else {
		put(fd, b, n);
	}
	if (want == 1) {
		valid(fd, b, n, mode & 0x01);
		if (!(mode & 0x01))
			close(fd);
		return 0;
	}
	if (mode & 0x02)
		shutdown(fd, SHUT_WR);
	/* closed without a Reply: by rule, at the FIN, or at the timeout */
	n = take(fd, b, sizeof(b), 0, &closed);
	FZ_CHECK(n == 0, "%zu octets answered a Request that is not valid "
		 "(reference: %s)", n, want ? "invalid" : "incomplete");
	close(fd);
	r = uiw_cm_get_event(G.ch, &ev, 0);
	FZ_CHECK(r == -EAGAIN, "event %s (%d) for a Request that is not "
		 "valid", r == 0 ? uiw_cm_event_str(ev.type) : "?", r);
	return 0;
}
