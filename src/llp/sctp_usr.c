/*
 * usrsctp as a carrier of DDP (RFC 5043) over UDP (RFC 6951): see sctp.h.
 *
 * usrsctp runs in AF_CONN mode without threads of its own
 * (usrsctp_init_nothreads): it takes packets from usrsctp_conninput,
 * hands packets out through usr_output, and runs its timers when
 * usr_tick calls usrsctp_handle_timers.  Every SCTP packet travels as the
 * payload of one UDP datagram (RFC 6951 §4) on UDP sockets of ours,
 * watched on the stack's progress thread, which is the only thread that
 * calls usrsctp.
 *
 * Links.  An AF_CONN address is an opaque value; usrsctp_conninput uses
 * it as both source and destination address of the packet.  One link is
 * one (our UDP socket, remote IP address and UDP port) pair, and its
 * AF_CONN address is its slot number in the stack's table plus one, so
 * that a value usrsctp still holds never points at freed memory.
 * Associations to or from one peer share its link; their SCTP ports tell
 * them apart.  A datagram from an unknown source on a listening UDP
 * socket makes a new link; on a connecting one only a packet that is
 * no INIT does (so that usrsctp answers it as out of the blue).  At most
 * USR_LINKS_MAX links exist: a new one sheds the least recently used
 * link that carries no association, and a peer gets none when all carry
 * one.  A link is freed when its last association goes down, or, if it
 * never carried one (an INIT that was never followed by its COOKIE ECHO),
 * after USR_LINK_IDLE_MS without traffic; it must live that long because
 * usrsctp's State Cookie covers the AF_CONN address, so the COOKIE ECHO
 * has to come in on the link the INIT came in on.  Link addresses are
 * registered with usrsctp once per slot and never deregistered: in
 * usrsctp 0.9.5.0 a deregistration queues address work that runs on
 * usrsctp's iterator thread, which it starts even without threads; a
 * slot registered again is the same address.
 *
 * Sockets.  Every association has a one-to-one usrsctp socket bound to
 * the AF_CONN wildcard (usrsctp binds all AF_CONN addresses when
 * sconn_addr is NULL), so it speaks over any link: a listener's accepts
 * associations from every link, and the listener checks that an
 * accepted one came in on a UDP socket of its own address.  Connects use
 * one UDP socket per address family (and local address, if one is
 * given) with an ephemeral port, sending to the peer's cfg.udp_port; the
 * peer answers to the port it saw (RFC 6951 §5.4).  Listeners share a
 * UDP socket on cfg.udp_port per local address.
 *
 * Path MTU.  cfg.mtu, or $UIW_SCTP_MTU, for every association; without
 * either, each association's by its peer's IP address: a loopback
 * address gets the loopback interface's (USR_MTU_LO), any other the
 * Internet's 1500 less IPv6 and UDP.  Both ends of an association on
 * loopback so choose alike, which matters: each side's MULPDU comes from
 * its own MTU and bounds the segments it takes (RFC 5043 §9).
 *
 * Callbacks.  usrsctp reports received messages and notifications
 * (usr_receive) and send space (usr_sendable) from inside its calls;
 * both only queue events, which usr_flush turns into upcalls after the
 * usrsctp call returned, so that an upcall may call anything here.
 * usr_output sends on the link's UDP socket directly (a socket call, no
 * usrsctp), dropping the packet when the socket is full: SCTP
 * retransmits.
 *
 * What usrsctp 0.9.5.0 does that this file relies on:
 *  - COMM_UP comes before the peer's Adaptation Layer Indication of the
 *    same handshake (both from one sctp_ulp_notify call); up is held
 *    back until another event of the association, or the end of the
 *    batch, so that it carries the indication.
 *  - SCTP_MAXSEG reports the association's fragmentation point: its
 *    path MTU less the common header and a DATA chunk header (16), on
 *    a 4-byte boundary.  spp_pathmtu counts the SCTP packet without its
 *    common header for AF_CONN: we set cfg.mtu - 12.  An association
 *    takes its socket's path MTU when it is made (a listener's: at the
 *    COOKIE ECHO) and never raises its fragmentation point after.
 *  - A full send buffer is EWOULDBLOCK from usrsctp_sendv (sends are
 *    never blocking with a receive callback); send_cb is called on each
 *    SACK while the free space is at least the threshold.
 *  - Messages shorter than the partial delivery point arrive whole; a
 *    longer one arrives in parts without MSG_EOR.  We set that point to
 *    USR_MSG_MAX and abort an association that sends more (a peer may
 *    not send a message over maxseg to a DDP endpoint).
 *  - Partial delivery of unordered messages may deadlock 0.9.5.0 (fixed
 *    upstream after it, "Fix two locking bugs when handling old
 *    unordered data"); so may FORWARD TSN handling there: PR-SCTP is
 *    off, and no message reaches the partial delivery point.
 *  - It processes chunks after an INIT in the same packet (fixed
 *    upstream after 0.9.5.0): usr_sane drops such packets, and packets
 *    whose chunk lengths do not fit, before usrsctp sees them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <usrsctp.h>

#include "../rt/log.h"
#include "../rt/rt.h"
#include "sctp_backend.h"

#ifndef SCTP_DEBUG
/* In the library (Debian builds it with SCTP_DEBUG), hidden by the
 * header unless SCTP_DEBUG is defined. */
int usrsctp_sysctl_set_sctp_debug_on(uint32_t value);
#endif

#define USR_TICK_MS        10      /* usrsctp's timers, while associations
				      exist */
#define USR_IDLE_TICK_MS   1000    /* none: listeners' and links' timers */
#define USR_TICK_LINGER_MS 2000    /* fast ticks after a socket closed, for
				      usrsctp's freeing timers */
#define USR_LINKS_MAX      4096    /* links (remote UDP endpoints) */
#define USR_LINK_HASH      1024
#define USR_LINK_IDLE_MS   60000   /* a link without association: usrsctp's
				      default valid cookie life */
#define USR_MTU_DEF        1452    /* SCTP packet: 1500 less IPv6 and UDP */
#define USR_MTU_MIN        524     /* spp_pathmtu >= 512, plus 12 */
#define USR_MTU_MAX        65487   /* one UDP datagram over IPv6 */
/* A peer on a loopback address: the loopback interface's MTU (65536)
 * carries the largest datagram either IP version allows, so nothing
 * fragments it (RFC 5043 §9); MULPDU is then 65454, under the 65535 a
 * DDP segment may have. */
#define USR_MTU_LO         USR_MTU_MAX
#define USR_MSG_MAX        (64 * 1024 + 4096) /* whole messages up to this */
#define USR_RCVBUF         (256 * 1024) /* > 2 * USR_MSG_MAX: usrsctp's
					  delivery point is at most half */
#define USR_SNDBUF         (256 * 1024)
#define USR_SND_THRESHOLD  (USR_SNDBUF / 2) /* writable: half free */
/* SO_RCVBUF and SO_SNDBUF of our UDP sockets (the kernel caps them at
 * net.core.rmem_max / wmem_max): a peer sends a whole receive window
 * (USR_RCVBUF of payload) in a burst, and the kernel counts each
 * datagram with its overhead, several times the payload for small ones;
 * a datagram the socket has no room for is lost, which SCTP repairs
 * only after its retransmission timeout (a second at least). */
#define USR_UDP_BUF        (4 << 20)
#define USR_BACKLOG_MAX    1024
#define USR_INIT_ATTEMPTS  6       /* INITs sent before giving up */
#define USR_INIT_TIMEO_MS  8000    /* their largest RTO: 3+6+8+8+8+8 s */
/* How long a dead path takes to end the association (RFC 4960 §8.1,
 * §8.2): more than Association.Max.Retrans consecutive retransmission
 * timeouts and unanswered heartbeats, the RTO doubling from RTO.Min up
 * to RTO.Max.  §15's defaults, usrsctp's too (RTO.Max 60 s,
 * Association.Max.Retrans 10), take some 4 minutes on loopback (243 s
 * measured: 1+2+4+...+32+60+60+60 s), as long as a QP's outstanding
 * work waits for its flush.  §15 lets the user tune them.  With one path
 * each way (§7.2 of RFC 5043: one local address), §8.1's note asks that
 * Association.Max.Retrans not exceed Path.Max.Retrans (5, kept), so 5;
 * and an RTO.Max of 8 s makes it 1+2+4+8+8+8 = 31 s where the RTO is
 * RTO.Min (tests/faultproxy/test_sctp_faults.c measures it).  RTO.Min
 * and RTO.Initial stay §15's (1 s, 3 s): nothing is retransmitted sooner
 * on a real network, only the backoff stops earlier. */
#define USR_RTO_MAX_MS     8000
#define USR_ASSOC_MAXRXT   5
#define USR_RX_BATCH       64      /* datagrams per wake-up */
#define USR_PORT_TRIES     256     /* ephemeral SCTP port picks */
#define USR_FINISH_MS      2000    /* usrsctp_finish retries */
#define USR_COMMON_HDR     12      /* RFC 4960 §3.1 */
#define USR_DATA_HDR       16      /* RFC 4960 §3.3.1 */

#define container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

struct usr_stack;

/* What a usrsctp socket's ulp_info points at. */
enum usr_owner_kind { OWN_LSN, OWN_ASSOC };
struct usr_owner {
	enum usr_owner_kind kind;
	struct usr_stack *st;
};

struct usr_usock {
	struct usr_usock *next;
	struct usr_stack *st;
	int fd;
	struct uiw_rt_watch *w;
	struct sockaddr_storage addr;   /* bound IP address and UDP port */
	bool listening;                 /* on cfg.udp_port, for listeners */
	bool wildcard;                  /* bound to the any address */
	unsigned lsns;                  /* listeners on it */
	unsigned refs;                  /* listeners and links */
};

struct usr_link {
	uintptr_t handle;               /* the AF_CONN address: slot + 1 */
	struct usr_usock *us;
	struct sockaddr_storage remote; /* IP address and UDP port */
	struct sockaddr_storage local;  /* our IP address (IP_PKTINFO) */
	bool local_known;
	bool carried;                   /* an association used it */
	unsigned assocs;
	uint64_t last_ms;
	struct usr_link *hnext;
	struct usr_link *prev, *next;   /* least recently used first */
};

enum usr_ev_type { EV_DATA, EV_NOTIF, EV_WRITABLE };
struct usr_ev {
	struct usr_ev *next;
	struct usr_owner *o;
	struct socket *so;
	enum usr_ev_type type;
	void *buf;
	size_t len;
	uint16_t sid;
	uint32_t ppid;                  /* host order */
	int flags;
	uint64_t seq;
};

struct usr_lsn {
	struct uiw_sctp_lsn_base base;
	struct usr_owner owner;
	struct usr_lsn *next;
	struct socket *so;
	struct usr_usock *us;
	struct sockaddr_storage addr;   /* IP address and SCTP port */
	const struct uiw_sctp_up *up;
	void *ctx;
	unsigned backlog;
	unsigned setup;                 /* accepted, not yet bound */
	uint32_t mtu;                   /* of the associations it makes */
};

struct usr_assoc {
	struct uiw_sctp_assoc_base base;
	struct usr_owner owner;
	struct usr_assoc *prev, *next;  /* the stack's */
	struct usr_assoc *up_next;      /* COMM_UP seen, up not yet made */
	struct usr_assoc *down_next;    /* down to make next round */
	struct socket *so;
	struct usr_link *link;
	struct usr_lsn *from;           /* accepted on (may be gone) */
	struct usr_lsn *lsn;            /* its listener's until bound */
	uint16_t lport, pport;          /* SCTP ports, host order */
	uint16_t in_streams, out_streams;
	bool comm_up, up_listed, up_done;
	bool visible;                   /* the user knows it */
	bool closing;                   /* shutdown, ours or the peer's */
	bool killed;                    /* aborted by us: down_err follows */
	bool down_done;
	bool want_writable, writable_queued;
	bool dry_watch;
	uint64_t dry_seq;
	int down_err;
	uint32_t mtu;                   /* its path MTU, as set */
};

struct usr_stack {
	struct uiw_sctp_stack_base base;
	uint16_t udp_port, streams;
	uint32_t mtu;                   /* 0: by the peer (usr_mtu_for) */

	pthread_mutex_t qlock;          /* the event queue */
	struct usr_ev *qhead, **qtail;
	uint64_t qseq;

	struct uiw_rt_work flush_work;
	bool flushing;
	struct uiw_rt_timer tick;
	bool ticking;
	uint64_t last_tick_ms, last_sweep_ms, linger_until_ms;
	unsigned nso;                   /* usrsctp sockets open */

	struct usr_usock *usocks;
	struct usr_lsn *lsns;
	struct usr_assoc *assocs;
	struct usr_assoc *ups, *downs;

	struct usr_link *slots[USR_LINKS_MAX];
	bool registered[USR_LINKS_MAX];
	struct usr_link *hash[USR_LINK_HASH];
	struct usr_link *lru_head, *lru_tail;
	unsigned nlinks, slot_hint;

	uint8_t rxbuf[65536];
	uint8_t txbuf[USR_MTU_MAX];     /* a gathered message (< maxseg) */
};

/* usrsctp is one per process; so is the stack of this backend.  The
 * library stays initialized when usrsctp_finish keeps failing. */
static _Atomic(struct usr_stack *) usr_cur;
static bool usr_lib_live;

static void usr_flush(struct usr_stack *st);
static void assoc_free(struct usr_stack *st, struct usr_assoc *a);

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#define STK(s) ((struct usr_stack *)(s))
#define ASC(a) ((struct usr_assoc *)(a))
#define LSN(l) ((struct usr_lsn *)(l))

/* ---- Addresses ------------------------------------------------------- */

static socklen_t sa_size(int family)
{
	return family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	       sizeof(struct sockaddr_in);
}

/* Copies an IPv4 or IPv6 address, an IPv4-mapped IPv6 one as IPv4. */
static int sa_norm(const struct sockaddr *sa, socklen_t len,
		   struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (!sa)
		return -EINVAL;
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		memcpy(out, sa, sizeof(struct sockaddr_in));
		return 0;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			struct sockaddr_in *s4 = (void *)out;

			s4->sin_family = AF_INET;
			s4->sin_port = s6->sin6_port;
			memcpy(&s4->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
			return 0;
		}
		memcpy(out, sa, sizeof(struct sockaddr_in6));
		return 0;
	}
	return -EAFNOSUPPORT;
}

static uint16_t sa_port(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ?
	       ntohs(((const struct sockaddr_in6 *)ss)->sin6_port) :
	       ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

static void sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

static bool sa_is_any(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return ((const struct sockaddr_in *)ss)->sin_addr.s_addr ==
	       htonl(INADDR_ANY);
}

/* The IP address's octets. */
static const uint8_t *sa_ip(const struct sockaddr_storage *ss, size_t *n)
{
	if (ss->ss_family == AF_INET6) {
		*n = sizeof(struct in6_addr);
		return ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
	}
	*n = sizeof(struct in_addr);
	return (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;
}

static bool sa_same_ip(const struct sockaddr_storage *a,
		       const struct sockaddr_storage *b)
{
	size_t na, nb;
	const uint8_t *pa = sa_ip(a, &na), *pb = sa_ip(b, &nb);

	return a->ss_family == b->ss_family && !memcmp(pa, pb, na);
}

static bool sa_same(const struct sockaddr_storage *a,
		    const struct sockaddr_storage *b)
{
	return sa_same_ip(a, b) && sa_port(a) == sa_port(b);
}

static bool sa_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(
			&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return ss->ss_family == AF_INET &&
	       (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >>
		24) == 127;
}

/* The path MTU of associations with a peer at this IP address: the
 * stack's, or, when it has none, the loopback interface's for a peer on
 * a loopback address (both ends of such an association choose alike,
 * so each sends what the other takes: RFC 5043 §9) and the default
 * otherwise. */
static uint32_t usr_mtu_for(const struct usr_stack *st,
			    const struct sockaddr_storage *peer)
{
	if (st->mtu)
		return st->mtu;
	return sa_is_loopback(peer) ? USR_MTU_LO : USR_MTU_DEF;
}

/* ---- UDP sockets ----------------------------------------------------- */

static void usock_readable(void *arg, uint32_t events);
static void lsn_mtu_for_cookie(struct usr_stack *st, const uint8_t *pkt,
			       const struct sockaddr_storage *from);

static void usock_unref(struct usr_usock *us)
{
	struct usr_stack *st = us->st;
	struct usr_usock **pp;

	if (--us->refs)
		return;
	for (pp = &st->usocks; *pp; pp = &(*pp)->next)
		if (*pp == us) {
			*pp = us->next;
			break;
		}
	uiw_rt_watch_del(us->w);
	close(us->fd);
	free(us);
}

/* A UDP socket bound to addr (port 0: ephemeral), reporting each
 * datagram's destination address (IP_PKTINFO), so that links on a
 * wildcard socket answer from the address the peer sent to. */
static int usock_open(struct usr_stack *st, const struct sockaddr_storage *addr,
		      bool listening, struct usr_usock **out)
{
	struct usr_usock *us = calloc(1, sizeof(*us));
	socklen_t len = sa_size(addr->ss_family);
	int one = 1, udp_buf = USR_UDP_BUF, e;

	if (!us)
		return -ENOMEM;
	us->st = st;
	us->listening = listening;
	us->addr = *addr;
	us->wildcard = sa_is_any(addr);
	us->fd = socket(addr->ss_family,
			SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (us->fd < 0) {
		e = errno;
		free(us);
		return -e;
	}
	setsockopt(us->fd, SOL_SOCKET, SO_RCVBUF, &udp_buf, sizeof(udp_buf));
	setsockopt(us->fd, SOL_SOCKET, SO_SNDBUF, &udp_buf, sizeof(udp_buf));
	if (addr->ss_family == AF_INET6) {
		setsockopt(us->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
			   sizeof(one));
		setsockopt(us->fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one,
			   sizeof(one));
	} else {
		setsockopt(us->fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
	}
	if (bind(us->fd, (const struct sockaddr *)addr, len) < 0 ||
	    getsockname(us->fd, (struct sockaddr *)&us->addr, &len) < 0)
		goto fail;
	us->w = uiw_rt_watch_add(st->base.rt, us->fd, EPOLLIN, usock_readable,
				 us);
	if (!us->w)
		goto fail;
	us->next = st->usocks;
	st->usocks = us;
	*out = us;
	return 0;
fail:
	e = errno;
	close(us->fd);
	free(us);
	return -e;
}

/* Listeners on one local address share its socket on cfg.udp_port; one
 * on a specific address uses a wildcard socket of its family if there
 * is one (the kernel would refuse the bind). */
static int usock_listen_get(struct usr_stack *st,
			    const struct sockaddr_storage *ip,
			    struct usr_usock **out)
{
	struct sockaddr_storage addr = *ip;
	struct usr_usock *us, *any = NULL;

	for (us = st->usocks; us; us = us->next) {
		if (!us->listening || us->addr.ss_family != ip->ss_family)
			continue;
		if (sa_same_ip(&us->addr, ip)) {
			*out = us;
			return 0;
		}
		if (us->wildcard)
			any = us;
	}
	if (any) {
		*out = any;
		return 0;
	}
	sa_set_port(&addr, st->udp_port);
	return usock_open(st, &addr, true, out);
}

/* Connects share a socket per family and local address. */
static int usock_connect_get(struct usr_stack *st, int family,
			     const struct sockaddr_storage *local,
			     struct usr_usock **out)
{
	struct sockaddr_storage addr;
	struct usr_usock *us;

	memset(&addr, 0, sizeof(addr));
	addr.ss_family = family;
	if (local)
		addr = *local;
	sa_set_port(&addr, 0);
	for (us = st->usocks; us; us = us->next)
		if (!us->listening && sa_same_ip(&us->addr, &addr)) {
			*out = us;
			return 0;
		}
	return usock_open(st, &addr, false, out);
}

/* ---- Links ----------------------------------------------------------- */

static bool link_keys_local(const struct usr_usock *us)
{
	return us->listening && us->wildcard;
}

/* FNV-1a */
static uint32_t fnv(uint32_t h, const uint8_t *p, size_t n)
{
	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

static unsigned link_hash(const struct usr_usock *us,
			  const struct sockaddr_storage *remote,
			  const struct sockaddr_storage *local)
{
	uint8_t port[2] = { sa_port(remote) >> 8, sa_port(remote) & 0xff };
	uint32_t h = 2166136261u ^ (uint32_t)(uintptr_t)us;
	size_t n;
	const uint8_t *ip = sa_ip(remote, &n);

	/* the remote address and port, and the local address where one
	 * socket receives for several */
	h = fnv(fnv(h, ip, n), port, 2);
	if (local && link_keys_local(us)) {
		ip = sa_ip(local, &n);
		h = fnv(h, ip, n);
	}
	return h % USR_LINK_HASH;
}

static struct usr_link *link_find(struct usr_stack *st, struct usr_usock *us,
				  const struct sockaddr_storage *remote,
				  const struct sockaddr_storage *local)
{
	struct usr_link *l;

	for (l = st->hash[link_hash(us, remote, local)]; l; l = l->hnext) {
		if (l->us != us || !sa_same(&l->remote, remote))
			continue;
		if (link_keys_local(us) &&
		    !(local && l->local_known && sa_same_ip(&l->local, local)))
			continue;
		return l;
	}
	return NULL;
}

static struct usr_link *link_of(struct usr_stack *st, uintptr_t handle)
{
	if (handle < 1 || handle > USR_LINKS_MAX)
		return NULL;
	return st->slots[handle - 1];
}

static void lru_unlink(struct usr_stack *st, struct usr_link *l)
{
	if (l->prev)
		l->prev->next = l->next;
	else
		st->lru_head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	else
		st->lru_tail = l->prev;
	l->prev = l->next = NULL;
}

static void lru_append(struct usr_stack *st, struct usr_link *l)
{
	l->prev = st->lru_tail;
	l->next = NULL;
	if (st->lru_tail)
		st->lru_tail->next = l;
	else
		st->lru_head = l;
	st->lru_tail = l;
}

static void link_free(struct usr_stack *st, struct usr_link *l)
{
	struct usr_link **pp;

	for (pp = &st->hash[link_hash(l->us, &l->remote, &l->local)]; *pp;
	     pp = &(*pp)->hnext)
		if (*pp == l) {
			*pp = l->hnext;
			break;
		}
	lru_unlink(st, l);
	st->slots[l->handle - 1] = NULL;
	st->nlinks--;
	usock_unref(l->us);
	free(l);
}

/* A new link; with all slots taken, the least recently used link without
 * an association makes room.  NULL when every link carries one. */
static struct usr_link *link_new(struct usr_stack *st, struct usr_usock *us,
				 const struct sockaddr_storage *remote,
				 const struct sockaddr_storage *local)
{
	struct usr_link *l, *old;
	unsigned i, slot = USR_LINKS_MAX;

	if (st->nlinks >= USR_LINKS_MAX) {
		for (old = st->lru_head; old; old = old->next)
			if (!old->assocs)
				break;
		if (!old)
			return NULL;
		UIW_DBG(2, "sctp/usrsctp: %u links: dropping an idle one",
			st->nlinks);
		link_free(st, old);
	}
	for (i = 0; i < USR_LINKS_MAX; i++) {
		unsigned s = (st->slot_hint + i) % USR_LINKS_MAX;

		if (!st->slots[s]) {
			slot = s;
			break;
		}
	}
	l = calloc(1, sizeof(*l));
	if (!l || slot == USR_LINKS_MAX) {
		free(l);
		return NULL;
	}
	st->slot_hint = slot + 1;
	l->handle = slot + 1;
	l->us = us;
	us->refs++;
	l->remote = *remote;
	if (local) {
		l->local = *local;
		l->local_known = true;
	}
	l->last_ms = now_ms();
	st->slots[slot] = l;
	st->nlinks++;
	l->hnext = st->hash[link_hash(us, remote, local)];
	st->hash[link_hash(us, remote, local)] = l;
	lru_append(st, l);
	if (!st->registered[slot]) {
		usrsctp_register_address((void *)l->handle);
		st->registered[slot] = true;
	}
	return l;
}

static void link_put(struct usr_stack *st, struct usr_link *l)
{
	if (--l->assocs == 0)
		link_free(st, l);
}

/* Links that never carried an association expire; the others go with
 * their last one. */
static void links_sweep(struct usr_stack *st, uint64_t now)
{
	struct usr_link *l, *next;

	for (l = st->lru_head; l; l = next) {
		next = l->next;
		if (!l->assocs && now - l->last_ms >= USR_LINK_IDLE_MS)
			link_free(st, l);
	}
}

/* Links without association on a socket no listener uses any more: what
 * they wait for (a COOKIE ECHO) would find no listener. */
static void links_drop_idle(struct usr_stack *st, struct usr_usock *us)
{
	struct usr_link *l, *next;

	for (l = st->lru_head; l; l = next) {
		next = l->next;
		if (l->us == us && !l->assocs)
			link_free(st, l);
	}
}

/* One SCTP packet in one datagram (RFC 6951 §4), from our address the
 * peer knows. */
static void link_send(struct usr_link *l, const void *buf, size_t len)
{
	union {
		char b[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} cm;
	struct in6_pktinfo pi6 = { .ipi6_ifindex = 0 };
	struct in_pktinfo pi4 = { .ipi_ifindex = 0 };
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = {
		.msg_name = &l->remote,
		.msg_namelen = sa_size(l->remote.ss_family),
		.msg_iov = &iov,
		.msg_iovlen = 1,
	};

	if (l->us->wildcard && l->local_known) {
		struct cmsghdr *c = (struct cmsghdr *)cm.b;
		const void *pi;
		size_t pilen;

		memset(&cm, 0, sizeof(cm));
		if (l->local.ss_family == AF_INET6) {
			const struct sockaddr_in6 *s6 = (const void *)&l->local;

			pi6.ipi6_addr = s6->sin6_addr;
			pi = &pi6;
			pilen = sizeof(pi6);
			c->cmsg_level = IPPROTO_IPV6;
			c->cmsg_type = IPV6_PKTINFO;
		} else {
			const struct sockaddr_in *s4 = (const void *)&l->local;

			pi4.ipi_spec_dst = s4->sin_addr;
			pi = &pi4;
			pilen = sizeof(pi4);
			c->cmsg_level = IPPROTO_IP;
			c->cmsg_type = IP_PKTINFO;
		}
		c->cmsg_len = CMSG_LEN(pilen);
		memcpy(CMSG_DATA(c), pi, pilen);
		mh.msg_control = cm.b;
		mh.msg_controllen = CMSG_SPACE(pilen);
	}
	if (sendmsg(l->us->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		UIW_DBG(3, "sctp/usrsctp: link %lu: send: %s",
			(unsigned long)l->handle, strerror(errno));
}

/* ---- usrsctp's callbacks: queue, never call back in ------------------ */

static void ev_push(struct usr_stack *st, struct usr_ev *ev)
{
	pthread_mutex_lock(&st->qlock);
	ev->seq = ++st->qseq;
	ev->next = NULL;
	*st->qtail = ev;
	st->qtail = &ev->next;
	pthread_mutex_unlock(&st->qlock);
	if (!uiw_rt_on_thread(st->base.rt))
		uiw_rt_post(st->base.rt, &st->flush_work);
}

static struct usr_ev *ev_pop(struct usr_stack *st)
{
	struct usr_ev *ev;

	pthread_mutex_lock(&st->qlock);
	ev = st->qhead;
	if (ev) {
		st->qhead = ev->next;
		if (!st->qhead)
			st->qtail = &st->qhead;
	}
	pthread_mutex_unlock(&st->qlock);
	return ev;
}

static bool ev_pending(struct usr_stack *st)
{
	bool any;

	pthread_mutex_lock(&st->qlock);
	any = st->qhead != NULL;
	pthread_mutex_unlock(&st->qlock);
	return any;
}

static uint64_t ev_seq(struct usr_stack *st)
{
	uint64_t seq;

	pthread_mutex_lock(&st->qlock);
	seq = st->qseq;
	pthread_mutex_unlock(&st->qlock);
	return seq;
}

static void ev_free(struct usr_ev *ev)
{
	free(ev->buf);   /* usrsctp's malloc */
	free(ev);
}

/* Drops the queued events of an owner (o) or of a socket (so). */
static void ev_purge(struct usr_stack *st, const struct usr_owner *o,
		     const struct socket *so)
{
	struct usr_ev **pp, *ev, *dead = NULL;

	pthread_mutex_lock(&st->qlock);
	for (pp = &st->qhead; (ev = *pp);) {
		if ((o && ev->o == o) || (so && ev->so == so)) {
			*pp = ev->next;
			ev->next = dead;
			dead = ev;
		} else {
			pp = &ev->next;
		}
	}
	st->qtail = &st->qhead;
	while (*st->qtail)
		st->qtail = &(*st->qtail)->next;
	pthread_mutex_unlock(&st->qlock);
	while ((ev = dead)) {
		dead = ev->next;
		ev_free(ev);
	}
}

/* Events of an accepted socket queued while its listener owned it. */
static void ev_retarget(struct usr_stack *st, const struct usr_owner *from,
			const struct socket *so, struct usr_owner *to)
{
	struct usr_ev *ev;

	pthread_mutex_lock(&st->qlock);
	for (ev = st->qhead; ev; ev = ev->next)
		if (ev->o == from && ev->so == so)
			ev->o = to;
	pthread_mutex_unlock(&st->qlock);
}

/* A message or a notification; data is ours to free (with usrsctp's
 * allocator: the C library's).  usrsctp calls this with data NULL after
 * SHUTDOWN COMPLETE; the notification before says it all. */
static int usr_receive(struct socket *so, union sctp_sockstore addr,
		       void *data, size_t len, struct sctp_rcvinfo rcv,
		       int flags, void *ulp)
{
	struct usr_owner *o = ulp;
	struct usr_ev *ev;

	(void)addr;
	if (!data)
		return 1;
	ev = o ? calloc(1, sizeof(*ev)) : NULL;
	if (!ev) {
		UIW_DBG(1, "sctp/usrsctp: a received %s lost (%s)",
			flags & MSG_NOTIFICATION ? "notification" : "message",
			o ? "out of memory" : "no owner");
		free(data);
		return 1;
	}
	ev->o = o;
	ev->so = so;
	ev->type = flags & MSG_NOTIFICATION ? EV_NOTIF : EV_DATA;
	ev->buf = data;
	ev->len = len;
	ev->sid = rcv.rcv_sid;
	ev->ppid = ntohl(rcv.rcv_ppid);
	ev->flags = flags;
	ev_push(o->st, ev);
	return 1;
}

/* A SACK left at least USR_SND_THRESHOLD free in the send buffer. */
static int usr_sendable(struct socket *so, uint32_t sb_free, void *ulp)
{
	struct usr_owner *o = ulp;
	struct usr_assoc *a;
	struct usr_ev *ev;

	(void)sb_free;
	if (!o || o->kind != OWN_ASSOC)
		return 0;
	a = container_of(o, struct usr_assoc, owner);
	if (!a->want_writable || a->writable_queued)
		return 0;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return 0;   /* the next SACK tries again */
	a->writable_queued = true;
	ev->o = o;
	ev->so = so;
	ev->type = EV_WRITABLE;
	ev_push(o->st, ev);
	return 0;
}

static int usr_output(void *addr, void *buf, size_t len, uint8_t tos,
		      uint8_t set_df)
{
	struct usr_stack *st = atomic_load(&usr_cur);
	struct usr_link *l;

	(void)tos;
	(void)set_df;
	/* usrsctp's iterator thread never sends with ASCONF off; if it did,
	 * the packet is lost, and SCTP retransmits. */
	if (!st || !uiw_rt_on_thread(st->base.rt))
		return 0;
	l = link_of(st, (uintptr_t)addr);
	if (l)
		link_send(l, buf, len);
	return 0;
}

static void usr_debug_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* ---- Received datagrams ---------------------------------------------- */

/* What usrsctp 0.9.5.0 would mishandle is not given to it: a packet
 * shorter than a common header and a chunk header, a chunk whose length
 * is below 4 or runs past the packet, and an INIT that is short or not
 * alone in its packet (RFC 4960 §6.10, §3.3.2). */
static bool usr_sane(const uint8_t *p, size_t n)
{
	size_t off = USR_COMMON_HDR;

	if (n < USR_COMMON_HDR + 4)
		return false;
	while (off + 4 <= n) {
		size_t clen = (size_t)p[off + 2] << 8 | p[off + 3];
		size_t padded = (clen + 3) & ~(size_t)3;

		if (clen < 4 || clen > n - off)
			return false;
		if (p[off] == 1 /* INIT */ &&
		    (off != USR_COMMON_HDR || clen < 20 || off + padded < n))
			return false;
		off += padded;
	}
	return true;
}

static void usock_readable(void *arg, uint32_t events)
{
	struct usr_usock *us = arg;
	struct usr_stack *st = us->st;
	unsigned i;

	(void)events;
	us->refs++;     /* a flush's upcalls may let go of it */
	for (i = 0; i < USR_RX_BATCH && us->refs > 1; i++) {
		union {
			char b[CMSG_SPACE(sizeof(struct in6_pktinfo)) +
			       CMSG_SPACE(sizeof(struct in_pktinfo))];
			struct cmsghdr align;
		} cm;
		struct sockaddr_storage from, local = us->addr;
		struct iovec iov = { st->rxbuf, sizeof(st->rxbuf) };
		struct msghdr mh = {
			.msg_name = &from,
			.msg_namelen = sizeof(from),
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = cm.b,
			.msg_controllen = sizeof(cm.b),
		};
		struct cmsghdr *c;
		struct usr_link *l;
		ssize_t n;

		n = recvmsg(us->fd, &mh, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				UIW_DBG(2, "sctp/usrsctp: udp receive: %s",
					strerror(errno));
			break;
		}
		if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
			continue;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level == IPPROTO_IP &&
			    c->cmsg_type == IP_PKTINFO) {
				struct in_pktinfo pi;

				memcpy(&pi, CMSG_DATA(c), sizeof(pi));
				((struct sockaddr_in *)&local)->sin_addr =
					pi.ipi_addr;
			} else if (c->cmsg_level == IPPROTO_IPV6 &&
				   c->cmsg_type == IPV6_PKTINFO) {
				struct in6_pktinfo pi;

				memcpy(&pi, CMSG_DATA(c), sizeof(pi));
				((struct sockaddr_in6 *)&local)->sin6_addr =
					pi.ipi6_addr;
			}
		}
		if (from.ss_family != us->addr.ss_family ||
		    !usr_sane(st->rxbuf, (size_t)n))
			continue;
		l = link_find(st, us, &from, &local);
		if (!l) {
			/* A stranger's INIT only where listeners are; other
			 * packets from strangers get usrsctp's answer to out
			 * of the blue packets (RFC 4960 §8.4): a SHUTDOWN ACK
			 * retransmitted after our association ended wants
			 * its SHUTDOWN COMPLETE. */
			if (!us->lsns && st->rxbuf[USR_COMMON_HDR] == 1)
				continue;
			l = link_new(st, us, &from, &local);
			if (!l) {
				UIW_DBG(2, "sctp/usrsctp: no link left for a "
					"new peer");
				continue;
			}
		} else if (!l->local_known) {
			l->local = local;
			l->local_known = true;
		}
		l->last_ms = now_ms();
		lru_unlink(st, l);
		lru_append(st, l);
		if (!st->mtu &&
		    st->rxbuf[USR_COMMON_HDR] == 10 /* COOKIE ECHO */)
			lsn_mtu_for_cookie(st, st->rxbuf, &from);
		usrsctp_conninput((void *)l->handle, st->rxbuf, (size_t)n, 0);
		/* What the datagram brought goes up before the next is read:
		 * usrsctp hands each message over in a buffer of its own
		 * (malloc), and a round of 64 datagrams of 64 KiB held
		 * 4 MiB of them at once, which the C library gave back and
		 * took again (page faults) every round. */
		usr_flush(st);
	}
	usr_flush(st);
	usock_unref(us);
}

/* ---- Timers ---------------------------------------------------------- */

static void tick_fn(void *arg)
{
	struct usr_stack *st = arg;
	uint64_t now = now_ms();

	if (now > st->last_tick_ms)
		usrsctp_handle_timers((uint32_t)(now - st->last_tick_ms));
	st->last_tick_ms = now;
	if (now - st->last_sweep_ms >= 1000) {
		links_sweep(st, now);
		st->last_sweep_ms = now;
	}
	usr_flush(st);
	/* An endpoint without associations keeps no state that needs a
	 * timer soon (the handshake is stateless until the COOKIE ECHO,
	 * whose association is accepted at once). */
	if (st->assocs || now < st->linger_until_ms)
		uiw_rt_timer_start(st->base.rt, &st->tick, USR_TICK_MS);
	else if (st->nso || st->nlinks)
		uiw_rt_timer_start(st->base.rt, &st->tick, USR_IDLE_TICK_MS);
	else
		st->ticking = false;
}

/* An association exists or went: usrsctp's timers run every
 * USR_TICK_MS. */
static void tick_fast(struct usr_stack *st)
{
	if (!st->ticking) {
		st->ticking = true;
		st->last_tick_ms = st->last_sweep_ms = now_ms();
	}
	uiw_rt_timer_start(st->base.rt, &st->tick, USR_TICK_MS);
}

/* ---- usrsctp sockets ------------------------------------------------- */

static int so_opt(struct socket *so, int level, int name, const void *v,
		  socklen_t len, const char *what)
{
	if (usrsctp_setsockopt(so, level, name, v, len) < 0) {
		int e = errno;

		UIW_DBG(1, "sctp/usrsctp: %s: %s", what, strerror(e));
		return -e;
	}
	return 0;
}

/* The path MTU of the socket's associations to come, without path MTU
 * discovery: usrsctp fixes an association's fragmentation point from it
 * when the association is made, and only ever lowers it later. */
static int so_set_mtu(struct socket *so, uint32_t mtu)
{
	struct sctp_paddrparams pp;

	memset(&pp, 0, sizeof(pp));
	pp.spp_assoc_id = SCTP_FUTURE_ASSOC;
	pp.spp_pathmtu = mtu - USR_COMMON_HDR;
	pp.spp_flags = SPP_PMTUD_DISABLE;
	return so_opt(so, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &pp,
		      sizeof(pp), "SCTP_PEER_ADDR_PARAMS");
}

/* What every socket is (sctp.h): DDP's adaptation code point in INIT and
 * INIT ACK (RFC 5043 §5.1), equal stream counts both ways (§8), no
 * Nagle, the path MTU, whole messages (partial delivery point), and the
 * notifications we act on. */
static int so_setup(struct usr_stack *st, struct socket *so, uint32_t mtu)
{
	static const uint16_t events[] = {
		SCTP_ASSOC_CHANGE, SCTP_ADAPTATION_INDICATION,
		SCTP_SHUTDOWN_EVENT, SCTP_SEND_FAILED_EVENT,
		SCTP_PEER_ADDR_CHANGE, SCTP_REMOTE_ERROR,
	};
	struct sctp_setadaptation ad = {
		.ssb_adaptation_ind = UIW_SCTP_ADAPT_DDP,
	};
	struct sctp_initmsg im = {
		.sinit_num_ostreams = st->streams,
		.sinit_max_instreams = st->streams,
		.sinit_max_attempts = USR_INIT_ATTEMPTS,
		.sinit_max_init_timeo = USR_INIT_TIMEO_MS,
	};
	struct sctp_rtoinfo rto = {
		.srto_assoc_id = SCTP_FUTURE_ASSOC,
		.srto_max = USR_RTO_MAX_MS,     /* 0: initial, min kept */
	};
	struct sctp_assocparams ap = {
		.sasoc_assoc_id = SCTP_FUTURE_ASSOC,
		.sasoc_asocmaxrxt = USR_ASSOC_MAXRXT,
	};
	uint32_t pdp = USR_MSG_MAX;
	int on = 1, rcv = USR_RCVBUF, snd = USR_SNDBUF, ret;
	size_t i;

	if (usrsctp_set_non_blocking(so, 1) < 0)
		return -errno;
	if ((ret = so_opt(so, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv),
			  "SO_RCVBUF")) ||
	    (ret = so_opt(so, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd),
			  "SO_SNDBUF")) ||
	    (ret = so_opt(so, IPPROTO_SCTP, SCTP_ADAPTATION_LAYER, &ad,
			  sizeof(ad), "SCTP_ADAPTATION_LAYER")) ||
	    (ret = so_opt(so, IPPROTO_SCTP, SCTP_INITMSG, &im, sizeof(im),
			  "SCTP_INITMSG")) ||
	    (ret = so_opt(so, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof(on),
			  "SCTP_NODELAY")) ||
	    (ret = so_opt(so, IPPROTO_SCTP, SCTP_RTOINFO, &rto, sizeof(rto),
			  "SCTP_RTOINFO")) ||
	    (ret = so_opt(so, IPPROTO_SCTP, SCTP_ASSOCINFO, &ap, sizeof(ap),
			  "SCTP_ASSOCINFO")) ||
	    (ret = so_set_mtu(so, mtu)) ||
	    (ret = so_opt(so, IPPROTO_SCTP, SCTP_PARTIAL_DELIVERY_POINT, &pdp,
			  sizeof(pdp), "SCTP_PARTIAL_DELIVERY_POINT")))
		return ret;
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		struct sctp_event ev = {
			.se_assoc_id = SCTP_FUTURE_ASSOC,
			.se_type = events[i],
			.se_on = 1,
		};

		ret = so_opt(so, IPPROTO_SCTP, SCTP_EVENT, &ev, sizeof(ev),
			     "SCTP_EVENT");
		if (ret)
			return ret;
	}
	return 0;
}

static struct socket *so_open(struct usr_stack *st, struct usr_owner *o,
			      uint32_t mtu, int *err)
{
	struct socket *so;

	so = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, usr_receive,
			    usr_sendable, USR_SND_THRESHOLD, o);
	if (!so) {
		*err = -errno;
		return NULL;
	}
	st->nso++;
	tick_fast(st);
	*err = so_setup(st, so, mtu);
	if (*err) {
		usrsctp_close(so);
		st->nso--;
		return NULL;
	}
	return so;
}

static void so_close(struct usr_stack *st, struct socket *so, bool abort)
{
	if (!so)
		return;
	if (abort) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		/* With a zero linger, close sends ABORT (RFC 4960 §9.1). */
		usrsctp_setsockopt(so, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	usrsctp_close(so);
	ev_purge(st, NULL, so);
	st->nso--;
	st->linger_until_ms = now_ms() + USR_TICK_LINGER_MS;
	tick_fast(st);
}

/* Binds so to the AF_CONN wildcard and port, or to a free ephemeral port
 * (the wildcard endpoint lists no address that would tell the port usrsctp
 * picked). */
static int so_bind(struct socket *so, uint16_t port, uint16_t *bound)
{
	struct sockaddr_conn sc;
	uint32_t r;
	unsigned i;

	memset(&sc, 0, sizeof(sc));
	sc.sconn_family = AF_CONN;
	if (port) {
		sc.sconn_port = htons(port);
		if (usrsctp_bind(so, (struct sockaddr *)&sc, sizeof(sc)) < 0)
			return -errno;
		*bound = port;
		return 0;
	}
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)now_ms();
	for (i = 0; i < USR_PORT_TRIES; i++) {
		/* RFC 6335 §6: the dynamic ports, 49152-65535 */
		port = (uint16_t)(49152 + (r + i * 7919u) % 16384);
		sc.sconn_port = htons(port);
		if (usrsctp_bind(so, (struct sockaddr *)&sc, sizeof(sc)) == 0) {
			*bound = port;
			return 0;
		}
		if (errno != EADDRINUSE)
			return -errno;
	}
	return -EADDRINUSE;
}

/* The link an accepted association came in on, and the peer's SCTP
 * port. */
static struct usr_link *so_link(struct usr_stack *st, struct socket *so,
				uint16_t *pport)
{
	struct sockaddr *addrs = NULL;
	struct usr_link *l = NULL;
	int n = usrsctp_getpaddrs(so, 0, &addrs);

	if (n >= 1 && addrs->sa_family == AF_CONN) {
		struct sockaddr_conn sc;

		memcpy(&sc, addrs, sizeof(sc));
		l = link_of(st, (uintptr_t)sc.sconn_addr);
		*pport = ntohs(sc.sconn_port);
	}
	if (n > 0)
		usrsctp_freepaddrs(addrs);
	return l;
}

static void dry_subscribe(struct usr_assoc *a, bool on)
{
	struct sctp_event ev = {
		.se_assoc_id = SCTP_FUTURE_ASSOC,
		.se_type = SCTP_SENDER_DRY_EVENT,
		.se_on = on,
	};

	/* Turning it on with nothing outstanding makes usrsctp report dry
	 * at once. */
	if (a->so)
		usrsctp_setsockopt(a->so, IPPROTO_SCTP, SCTP_EVENT, &ev,
				   sizeof(ev));
}

/* ---- Associations ---------------------------------------------------- */

static void flush_later(struct usr_stack *st)
{
	if (ev_pending(st) || st->downs)
		uiw_rt_post(st->base.rt, &st->flush_work);
}

static struct usr_assoc *assoc_alloc(struct usr_stack *st)
{
	struct usr_assoc *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->base.stack = (struct uiw_sctp_stack *)st;
	a->owner.kind = OWN_ASSOC;
	a->owner.st = st;
	return a;
}

static void assoc_link_in(struct usr_stack *st, struct usr_assoc *a)
{
	a->prev = NULL;
	a->next = st->assocs;
	if (st->assocs)
		st->assocs->prev = a;
	st->assocs = a;
}

static void ups_remove(struct usr_stack *st, struct usr_assoc *a)
{
	struct usr_assoc **pp;

	if (!a->up_listed)
		return;
	for (pp = &st->ups; *pp; pp = &(*pp)->up_next)
		if (*pp == a) {
			*pp = a->up_next;
			break;
		}
	a->up_listed = false;
}

static void lsn_detach(struct usr_assoc *a)
{
	if (a->lsn) {
		a->lsn->setup--;
		a->lsn = NULL;
	}
}

static void assoc_free(struct usr_stack *st, struct usr_assoc *a)
{
	struct usr_assoc **pp;

	ups_remove(st, a);
	for (pp = &st->downs; *pp; pp = &(*pp)->down_next)
		if (*pp == a) {
			*pp = a->down_next;
			break;
		}
	lsn_detach(a);
	if (a->so) {
		so_close(st, a->so, !a->down_done);
		a->so = NULL;
	}
	ev_purge(st, &a->owner, NULL);
	if (a->prev)
		a->prev->next = a->next;
	else
		st->assocs = a->next;
	if (a->next)
		a->next->prev = a->prev;
	if (a->link)
		link_put(st, a->link);
	if (a->visible)
		st->base.users--;
	free(a);
}

/* The up upcall, once: after COMM_UP and the Adaptation Layer
 * Indication that came with it. */
static void deliver_up(struct usr_stack *st, struct usr_assoc *a)
{
	struct uiw_sctp_info *in = &a->base.info;
	struct sctp_assoc_value av = { .assoc_id = 0 };
	socklen_t len = sizeof(av);

	ups_remove(st, a);
	if (a->up_done || a->down_done || a->killed || !a->comm_up)
		return;
	a->up_done = true;
	in->in_streams = a->in_streams;
	in->out_streams = a->out_streams;
	in->streams = a->in_streams < a->out_streams ? a->in_streams :
		      a->out_streams;
	if (usrsctp_getsockopt(a->so, IPPROTO_SCTP, SCTP_MAXSEG, &av,
			       &len) == 0 && av.assoc_value)
		in->maxseg = av.assoc_value;
	else
		in->maxseg = (a->mtu - USR_COMMON_HDR - USR_DATA_HDR) & ~3u;
	in->local = a->link->local_known ? a->link->local : a->link->us->addr;
	sa_set_port(&in->local, a->lport);
	in->peer = a->link->remote;
	sa_set_port(&in->peer, a->pport);
	in->peer_udp_port = sa_port(&a->link->remote);
	if (!a->visible) {
		a->visible = true;
		st->base.users++;
	}
	if (a->dry_watch)
		dry_subscribe(a, true);
	UIW_DBG(1, "sctp/usrsctp: association %u->%u up (%s), %u/%u streams, "
		"maxseg %u, adaptation %s%x", a->lport, a->pport,
		in->active ? "active" : "passive", in->in_streams,
		in->out_streams, in->maxseg,
		in->peer_adapt_seen ? "" : "none ", in->peer_adapt);
	a->base.up->up(a->base.ctx, (struct uiw_sctp_assoc *)a, in);
}

static void deliver_pending_up(struct usr_stack *st, struct usr_assoc *a)
{
	if (a->up_listed)
		deliver_up(st, a);
}

/* The association is over: the down upcall (if the user knows it), then
 * it is freed. */
static void assoc_down(struct usr_stack *st, struct usr_assoc *a, int err)
{
	if (a->down_done)
		return;
	deliver_pending_up(st, a);
	a->down_done = true;
	lsn_detach(a);
	if (a->so) {
		so_close(st, a->so, a->killed);
		a->so = NULL;
	}
	ev_purge(st, &a->owner, NULL);
	UIW_DBG(1, "sctp/usrsctp: association %u->%u down: %s", a->lport,
		a->pport, err ? strerror(-err) : "shut down");
	if (a->visible)
		a->base.up->down(a->base.ctx, (struct uiw_sctp_assoc *)a, err);
	assoc_free(st, a);
}

/* Aborts now; the down upcall with err comes from the next round. */
static void assoc_kill(struct usr_stack *st, struct usr_assoc *a, int err)
{
	if (a->down_done || a->killed)
		return;
	a->killed = true;
	a->down_err = err;
	ups_remove(st, a);
	lsn_detach(a);
	so_close(st, a->so, true);
	a->so = NULL;
	ev_purge(st, &a->owner, NULL);
	a->down_next = st->downs;
	st->downs = a;
	uiw_rt_post(st->base.rt, &st->flush_work);
}

/* How an association that was lost or never made it ended: the peer's
 * ABORT (a 1-to-1 socket's so_error says ECONNREFUSED or ECONNRESET, and
 * the notification carries the chunk), or our own giving up
 * (retransmissions, INITs: ETIMEDOUT or ECONNABORTED). */
static int lost_err(struct usr_assoc *a, const struct sctp_assoc_change *sac)
{
	socklen_t len = sizeof(int);
	bool peer = false;
	int soerr = 0;

	if (usrsctp_getsockopt(a->so, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0)
		peer = soerr == ECONNREFUSED || soerr == ECONNRESET;
	if (sac->sac_length > sizeof(*sac) &&
	    sac->sac_info[0] == SCTP_ABORT_ASSOCIATION)
		peer = true;
	if (!peer)
		return -ETIMEDOUT;
	return a->comm_up ? -ECONNRESET : -ECONNREFUSED;
}

static void on_assoc_change(struct usr_stack *st, struct usr_assoc *a,
			    const struct sctp_assoc_change *sac)
{
	switch (sac->sac_state) {
	case SCTP_COMM_UP:
		if (a->comm_up)
			break;
		a->comm_up = true;
		a->in_streams = sac->sac_inbound_streams;
		a->out_streams = sac->sac_outbound_streams;
		a->up_next = st->ups;
		st->ups = a;
		a->up_listed = true;
		break;
	case SCTP_RESTART:
		/* The peer lost its state: DDP's with it is gone too. */
		UIW_DBG(1, "sctp/usrsctp: association %u->%u: peer restarted",
			a->lport, a->pport);
		assoc_kill(st, a, -ECONNRESET);
		break;
	case SCTP_COMM_LOST:
	case SCTP_CANT_STR_ASSOC:
		assoc_down(st, a, lost_err(a, sac));
		break;
	case SCTP_SHUTDOWN_COMP:
		assoc_down(st, a, 0);
		break;
	}
}

static void on_notification(struct usr_stack *st, struct usr_assoc *a,
			    const void *buf, size_t len, uint64_t seq)
{
	const union sctp_notification *n = buf;

	if (len < sizeof(n->sn_header) || n->sn_header.sn_length > len)
		return;
	switch (n->sn_header.sn_type) {
	case SCTP_ASSOC_CHANGE:
		if (len >= sizeof(n->sn_assoc_change))
			on_assoc_change(st, a, &n->sn_assoc_change);
		break;
	case SCTP_ADAPTATION_INDICATION:
		/* RFC 5061 §4.2.6, in host order from usrsctp */
		if (len >= sizeof(n->sn_adaptation_event)) {
			a->base.info.peer_adapt_seen = true;
			a->base.info.peer_adapt =
				n->sn_adaptation_event.sai_adaptation_ind;
		}
		break;
	case SCTP_SENDER_DRY_EVENT:
		deliver_pending_up(st, a);
		/* A report queued before the watch began is stale. */
		if (!a->dry_watch || seq < a->dry_seq || !a->up_done ||
		    a->killed)
			break;
		a->dry_watch = false;
		dry_subscribe(a, false);
		a->base.up->dry(a->base.ctx, (struct uiw_sctp_assoc *)a);
		break;
	case SCTP_SHUTDOWN_EVENT:
		deliver_pending_up(st, a);
		a->closing = true;
		break;
	case SCTP_SEND_FAILED_EVENT:
		UIW_DBG(1, "sctp/usrsctp: association %u->%u: a message of "
			"stream %u was not delivered (error %u)", a->lport,
			a->pport, n->sn_send_failed_event.ssfe_info.snd_sid,
			n->sn_send_failed_event.ssfe_error);
		break;
	case SCTP_PEER_ADDR_CHANGE:
		UIW_DBG(2, "sctp/usrsctp: association %u->%u: path state %u",
			a->lport, a->pport, n->sn_paddr_change.spc_state);
		break;
	case SCTP_REMOTE_ERROR:
		UIW_DBG(1, "sctp/usrsctp: association %u->%u: peer reports "
			"error %u", a->lport, a->pport,
			n->sn_remote_error.sre_error);
		break;
	}
}

/* ---- Listeners ------------------------------------------------------- */

/* Whether a listener takes what came in on link: on a listening UDP
 * socket, to its address. */
static bool lsn_takes(const struct usr_lsn *l, const struct usr_link *link)
{
	const struct usr_usock *us = link->us;

	if (!us->listening || us->addr.ss_family != l->addr.ss_family)
		return false;
	if (sa_is_any(&l->addr))
		return true;
	return sa_same_ip(&l->addr, link->local_known ? &link->local :
			  &us->addr);
}

/* usrsctp makes a listener's association when the COOKIE ECHO comes
 * (RFC 4960 §5.1 D), with the path MTU the listening socket has then:
 * the one for this peer (usr_mtu_for). */
static void lsn_mtu_for_cookie(struct usr_stack *st, const uint8_t *pkt,
			       const struct sockaddr_storage *from)
{
	uint16_t dport = (uint16_t)(pkt[2] << 8 | pkt[3]);
	uint32_t mtu = usr_mtu_for(st, from);
	struct usr_lsn *l;

	for (l = st->lsns; l; l = l->next) {
		if (sa_port(&l->addr) != dport || !l->so || l->mtu == mtu)
			continue;
		if (so_set_mtu(l->so, mtu) == 0)
			l->mtu = mtu;
	}
}

/* Takes the associations usrsctp completed on the listener; each gets
 * its own socket's events from now on. */
static void lsn_accept(struct usr_stack *st, struct usr_lsn *l)
{
	struct socket *so;

	while (l->so && (so = usrsctp_accept(l->so, NULL, NULL))) {
		struct usr_assoc *a = assoc_alloc(st);
		const char *why = NULL;
		struct usr_link *link;
		uint16_t pport = 0;

		st->nso++;
		link = so_link(st, so, &pport);
		if (!a)
			why = "out of memory";
		else if (!link)
			why = "no link";
		else if (!lsn_takes(l, link))
			why = "not to the listener's address";
		else if (l->setup >= l->backlog)
			why = "backlog full";
		if (why) {
			UIW_DBG(1, "sctp/usrsctp: listener %u: association "
				"refused: %s", sa_port(&l->addr), why);
			so_close(st, so, true);
			free(a);
			continue;
		}
		a->so = so;
		a->mtu = usr_mtu_for(st, &link->remote);
		usrsctp_set_ulpinfo(so, &a->owner);
		a->link = link;
		link->assocs++;
		link->carried = true;
		a->from = a->lsn = l;
		l->setup++;
		a->lport = sa_port(&l->addr);
		a->pport = pport;
		a->base.up = l->up;
		a->base.ctx = l->ctx;
		assoc_link_in(st, a);
		ev_retarget(st, &l->owner, so, &a->owner);
		tick_fast(st);
	}
}

/* The association an event is for: one of ours, or one its listener
 * still has to accept. */
static struct usr_assoc *ev_target(struct usr_stack *st, struct usr_ev *ev)
{
	struct usr_lsn *l;
	struct usr_assoc *a;

	if (ev->o->kind == OWN_ASSOC)
		return container_of(ev->o, struct usr_assoc, owner);
	l = container_of(ev->o, struct usr_lsn, owner);
	lsn_accept(st, l);
	for (a = st->assocs; a; a = a->next)
		if (a->from == l && a->so == ev->so)
			return a;
	return NULL;
}

static void ev_handle(struct usr_stack *st, struct usr_ev *ev)
{
	struct usr_assoc *a = ev_target(st, ev);

	if (!a || a->down_done || a->killed) {
		ev_free(ev);
		return;
	}
	switch (ev->type) {
	case EV_WRITABLE:
		a->writable_queued = false;
		deliver_pending_up(st, a);
		if (a->want_writable && a->up_done && !a->closing &&
		    !a->killed && !a->down_done) {
			a->want_writable = false;
			a->base.up->writable(a->base.ctx,
					     (struct uiw_sctp_assoc *)a);
		}
		ev_free(ev);
		return;
	case EV_DATA:
		deliver_pending_up(st, a);
		if (a->killed || a->down_done || !a->up_done) {
			ev_free(ev);
			return;
		}
		if (!(ev->flags & MSG_EOR)) {
			/* A part: the message is longer than USR_MSG_MAX. */
			UIW_DBG(1, "sctp/usrsctp: association %u->%u: a "
				"message over %u octets", a->lport, a->pport,
				USR_MSG_MAX);
			ev_free(ev);
			assoc_kill(st, a, -EPROTO);
			return;
		}
		a->base.up->msg(a->base.ctx, (struct uiw_sctp_assoc *)a,
				ev->sid, ev->ppid, ev->buf, ev->len);
		free(ev);
		return;
	case EV_NOTIF:
		on_notification(st, a, ev->buf, ev->len, ev->seq);
		ev_free(ev);
		return;
	}
}

/* Turns queued events into upcalls, until none is left.  Never runs
 * inside itself: an upcall's calls queue events for the loop. */
static void usr_flush(struct usr_stack *st)
{
	struct usr_ev *ev;

	if (st->flushing)
		return;
	st->flushing = true;
	for (;;) {
		while ((ev = ev_pop(st)))
			ev_handle(st, ev);
		if (!st->ups)
			break;
		deliver_up(st, st->ups);
	}
	st->flushing = false;
}

/* Posted work: downs of aborted associations, then the queue. */
static void flush_work_fn(void *arg)
{
	struct usr_stack *st = arg;

	while (st->downs) {
		struct usr_assoc *a = st->downs;

		st->downs = a->down_next;
		a->down_done = true;
		UIW_DBG(1, "sctp/usrsctp: association %u->%u aborted: %s",
			a->lport, a->pport, strerror(-a->down_err));
		if (a->visible)
			a->base.up->down(a->base.ctx,
					 (struct uiw_sctp_assoc *)a,
					 a->down_err);
		assoc_free(st, a);
	}
	usr_flush(st);
}

/* ---- The operations -------------------------------------------------- */

static int usr_listen(struct uiw_sctp_stack *s, const struct sockaddr *sa,
		      socklen_t salen, int backlog,
		      const struct uiw_sctp_up *up, void *ctx,
		      struct uiw_sctp_lsn **out)
{
	struct usr_stack *st = STK(s);
	struct usr_lsn *l;
	uint16_t port;
	int ret;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	ret = sa_norm(sa, salen, &l->addr);
	if (ret) {
		free(l);
		return uiw_error(-ret, "sctp/usrsctp: listen: not an IPv4 "
				 "or IPv6 address");
	}
	l->base.stack = s;
	l->owner.kind = OWN_LSN;
	l->owner.st = st;
	l->up = up;
	l->ctx = ctx;
	l->backlog = backlog < 1 ? 1 : backlog > USR_BACKLOG_MAX ?
		     USR_BACKLOG_MAX : (unsigned)backlog;
	ret = usock_listen_get(st, &l->addr, &l->us);
	if (ret) {
		free(l);
		return uiw_error(-ret, "sctp/usrsctp: listen: UDP port %u: %s",
				 st->udp_port, strerror(-ret));
	}
	l->us->refs++;
	l->mtu = usr_mtu_for(st, &l->addr);
	l->so = so_open(st, &l->owner, l->mtu, &ret);
	if (!l->so)
		goto fail;
	ret = so_bind(l->so, sa_port(&l->addr), &port);
	if (ret)
		goto fail;
	if (usrsctp_listen(l->so, (int)l->backlog) < 0) {
		ret = -errno;
		goto fail;
	}
	sa_set_port(&l->addr, port);
	l->us->lsns++;
	l->next = st->lsns;
	st->lsns = l;
	st->base.users++;
	*out = (struct uiw_sctp_lsn *)l;
	flush_later(st);
	UIW_DBG(1, "sctp/usrsctp: listening on SCTP port %u, UDP port %u",
		port, sa_port(&l->us->addr));
	return 0;
fail:
	port = sa_port(&l->addr);
	so_close(st, l->so, false);
	usock_unref(l->us);
	free(l);
	return uiw_error(-ret, "sctp/usrsctp: listen on SCTP port %u: %s",
			 port, strerror(-ret));
}

static void usr_lsn_addr(const struct uiw_sctp_lsn *l,
			 struct sockaddr_storage *ss)
{
	*ss = ((const struct usr_lsn *)l)->addr;
}

/* Associations it accepted and reported live on; those it had not
 * reported yet are aborted. */
static void usr_unlisten(struct uiw_sctp_lsn *lsn)
{
	struct usr_lsn *l = LSN(lsn), **pp;
	struct usr_stack *st = l->owner.st;
	struct usr_assoc *a, *next;

	for (a = st->assocs; a; a = next) {
		next = a->next;
		if (a->from != l)
			continue;
		a->from = NULL;
		lsn_detach(a);
		if (!a->visible && !a->killed && !a->down_done)
			assoc_free(st, a);
	}
	so_close(st, l->so, false);
	l->so = NULL;
	ev_purge(st, &l->owner, NULL);
	if (--l->us->lsns == 0)
		links_drop_idle(st, l->us);
	usock_unref(l->us);
	for (pp = &st->lsns; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	st->base.users--;
	free(l);
	flush_later(st);
}

static void usr_bind(struct uiw_sctp_assoc *a)
{
	lsn_detach(ASC(a));
}

static int usr_connect(struct uiw_sctp_stack *s, const struct sockaddr *peer,
		       socklen_t peerlen, const struct sockaddr *local,
		       socklen_t locallen, uint16_t udp_port,
		       const struct uiw_sctp_up *up, void *ctx,
		       struct uiw_sctp_assoc **out)
{
	struct usr_stack *st = STK(s);
	struct sockaddr_storage p, loc, remote;
	struct sockaddr_conn sc;
	struct usr_usock *us;
	struct usr_link *l;
	struct usr_assoc *a;
	int ret;

	if (sa_norm(peer, peerlen, &p) || !sa_port(&p) || sa_is_any(&p))
		return uiw_error(EINVAL, "sctp/usrsctp: connect: the peer "
				 "is not an IPv4 or IPv6 address and port");
	if (local && (sa_norm(local, locallen, &loc) ||
		      loc.ss_family != p.ss_family))
		return uiw_error(EINVAL, "sctp/usrsctp: connect: the local "
				 "address is not of the peer's family");
	ret = usock_connect_get(st, p.ss_family, local ? &loc : NULL, &us);
	if (ret)
		return uiw_error(-ret, "sctp/usrsctp: connect: UDP socket: %s",
				 strerror(-ret));
	remote = p;
	sa_set_port(&remote, udp_port);
	us->refs++;   /* kept while the link is looked up or made */
	l = link_find(st, us, &remote, NULL);
	if (!l)
		l = link_new(st, us, &remote, NULL);
	usock_unref(us);
	if (!l)
		return uiw_error(ENOBUFS, "sctp/usrsctp: connect: %u links, "
				 "all in use", USR_LINKS_MAX);
	l->assocs++;
	l->carried = true;
	a = assoc_alloc(st);
	if (!a) {
		ret = -ENOMEM;
		goto fail_link;
	}
	a->link = l;
	a->base.up = up;
	a->base.ctx = ctx;
	a->base.info.active = true;
	a->pport = sa_port(&p);
	a->mtu = usr_mtu_for(st, &p);
	a->so = so_open(st, &a->owner, a->mtu, &ret);
	if (!a->so)
		goto fail;
	ret = so_bind(a->so, local ? sa_port(&loc) : 0, &a->lport);
	if (ret)
		goto fail;
	memset(&sc, 0, sizeof(sc));
	sc.sconn_family = AF_CONN;
	sc.sconn_port = htons(a->pport);
	sc.sconn_addr = (void *)l->handle;
	if (usrsctp_connect(a->so, (struct sockaddr *)&sc, sizeof(sc)) < 0 &&
	    errno != EINPROGRESS) {
		ret = -errno;
		goto fail;
	}
	a->visible = true;
	st->base.users++;
	assoc_link_in(st, a);
	*out = (struct uiw_sctp_assoc *)a;
	flush_later(st);
	UIW_DBG(1, "sctp/usrsctp: association %u->%u: INIT sent", a->lport,
		a->pport);
	return 0;
fail:
	if (a->so) {
		so_close(st, a->so, true);
		a->so = NULL;
	}
	free(a);
fail_link:
	link_put(st, l);
	return uiw_error(-ret, "sctp/usrsctp: connect: %s", strerror(-ret));
}

static int usr_send(struct uiw_sctp_assoc *aa, uint16_t sid, uint32_t ppid,
		    const struct iovec *iov, int iovcnt)
{
	struct usr_assoc *a = ASC(aa);
	struct usr_stack *st = a->owner.st;
	struct sctp_sndinfo snd = {
		.snd_sid = sid,
		.snd_flags = SCTP_UNORDERED,   /* RFC 5043 §10 */
		.snd_ppid = htonl(ppid),
	};
	const void *buf;
	size_t len = 0;
	ssize_t n;
	int i, e;

	if (!a->up_done || a->down_done || a->killed || a->closing)
		return -ENOTCONN;
	if (sid >= a->base.info.streams || iovcnt < 0)
		return -EINVAL;
	for (i = 0; i < iovcnt; i++) {
		len += iov[i].iov_len;
		if (len > a->base.info.maxseg)
			return -EMSGSIZE;
	}
	if (!len)
		return -EINVAL;
	/* usrsctp said the send buffer was full and has not said since
	 * that it has room: the answer is the same, without gathering the
	 * message first (writable follows). */
	if (a->want_writable)
		return -EAGAIN;
	if (iovcnt == 1) {
		buf = iov[0].iov_base;
	} else {
		size_t off = 0;

		for (i = 0; i < iovcnt; i++) {
			memcpy(st->txbuf + off, iov[i].iov_base,
			       iov[i].iov_len);
			off += iov[i].iov_len;
		}
		buf = st->txbuf;
	}
	n = usrsctp_sendv(a->so, buf, len, NULL, 0, &snd, sizeof(snd),
			  SCTP_SENDV_SNDINFO, 0);
	e = errno;
	flush_later(st);
	if (n >= 0)
		return 0;
	switch (e) {
	case EWOULDBLOCK:
		a->want_writable = true;
		return -EAGAIN;
	case EMSGSIZE:
		return -EMSGSIZE;
	case EINVAL:
		return -EINVAL;
	default:
		UIW_DBG(2, "sctp/usrsctp: association %u->%u: send: %s",
			a->lport, a->pport, strerror(e));
		return -ENOTCONN;
	}
}

static int usr_unacked(struct uiw_sctp_assoc *aa)
{
	struct usr_assoc *a = ASC(aa);
	struct sctp_status ss;
	socklen_t len = sizeof(ss);

	if (!a->so)
		return -ENOTCONN;
	memset(&ss, 0, sizeof(ss));
	if (usrsctp_getsockopt(a->so, IPPROTO_SCTP, SCTP_STATUS, &ss, &len) < 0)
		return -errno;
	return ss.sstat_unackdata;
}

static void usr_watch_dry(struct uiw_sctp_assoc *aa)
{
	struct usr_assoc *a = ASC(aa);
	struct usr_stack *st = a->owner.st;

	if (a->down_done || a->killed)
		return;
	a->dry_watch = true;
	a->dry_seq = ev_seq(st) + 1;
	if (a->up_done)
		dry_subscribe(a, true);
	flush_later(st);
}

static void usr_shutdown(struct uiw_sctp_assoc *aa)
{
	struct usr_assoc *a = ASC(aa);
	struct usr_stack *st = a->owner.st;

	if (a->down_done || a->killed)
		return;
	a->closing = true;
	if (usrsctp_shutdown(a->so, SHUT_WR) < 0) {
		/* Not established yet (usrsctp wants ENOTCONN here): nothing
		 * was sent, so nothing is lost by ending it at once. */
		UIW_DBG(1, "sctp/usrsctp: association %u->%u: shutdown: %s",
			a->lport, a->pport, strerror(errno));
		assoc_kill(st, a, 0);
		return;
	}
	flush_later(st);
}

static void usr_abort(struct uiw_sctp_assoc *aa)
{
	struct usr_assoc *a = ASC(aa);

	assoc_kill(a->owner.st, a, -ECONNABORTED);
}

static void usr_buf_free(struct uiw_sctp_stack *s, void *buf)
{
	(void)s;
	free(buf);   /* usrsctp allocates received messages with malloc */
}

/* ---- The stack ------------------------------------------------------- */

static int create_on_thread(void *arg)
{
	struct usr_stack *st = arg;
	const char *dbg = getenv("UIW_SCTP_DEBUG");

	if (atomic_load(&usr_cur))
		return -EBUSY;
	if (!usr_lib_live) {
		usrsctp_init_nothreads(0, usr_output,
				       dbg ? usr_debug_printf : NULL);
		usr_lib_live = true;
		/* Features DDP does not use stay off: fewer paths through
		 * 0.9.5.0, none that needs its iterator thread (ASCONF) or
		 * FORWARD TSN (PR-SCTP).  ASCONF goes before AUTH, which it
		 * needs. */
		usrsctp_sysctl_set_sctp_auto_asconf(0);
		usrsctp_sysctl_set_sctp_asconf_enable(0);
		usrsctp_sysctl_set_sctp_auth_enable(0);
		usrsctp_sysctl_set_sctp_pr_enable(0);
		usrsctp_sysctl_set_sctp_reconfig_enable(0);
		usrsctp_sysctl_set_sctp_nrsack_enable(0);
		usrsctp_sysctl_set_sctp_pktdrop_enable(0);
		if (dbg)
			usrsctp_sysctl_set_sctp_debug_on(
				(uint32_t)strtoul(dbg, NULL, 0) > 1 ?
				(uint32_t)strtoul(dbg, NULL, 0) : 0xffffffffu);
	}
	atomic_store(&usr_cur, st);
	return 0;
}

static int usr_create(const struct uiw_sctp_config *cfg,
		      struct uiw_sctp_stack **out)
{
	struct usr_stack *st;
	uint32_t env_mtu = 0;
	const char *e;
	int ret;

	if (cfg->mtu && (cfg->mtu < USR_MTU_MIN || cfg->mtu > USR_MTU_MAX))
		return uiw_error(EINVAL, "usrsctp: path MTU %u outside "
				 "%u..%u", cfg->mtu, USR_MTU_MIN, USR_MTU_MAX);
	/* UIW_SCTP_MTU: the path MTU of a process whose stack is made
	 * without one (every association, whatever the peer). */
	e = getenv("UIW_SCTP_MTU");
	if (e && *e) {
		char *end;
		unsigned long v = strtoul(e, &end, 10);

		if (*end || v < USR_MTU_MIN || v > USR_MTU_MAX)
			return uiw_error(EINVAL, "usrsctp: UIW_SCTP_MTU=%s: "
					 "not a path MTU in %u..%u", e,
					 USR_MTU_MIN, USR_MTU_MAX);
		env_mtu = (uint32_t)v;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return uiw_error(ENOMEM, "usrsctp: out of memory");
	st->udp_port = cfg->udp_port;
	st->streams = cfg->streams;
	st->mtu = cfg->mtu ? cfg->mtu : env_mtu;
	pthread_mutex_init(&st->qlock, NULL);
	st->qtail = &st->qhead;
	uiw_rt_work_init(&st->flush_work, flush_work_fn, st);
	uiw_rt_timer_init(&st->tick, tick_fn, st);
	st->base.rt = uiw_rt_create("uiw-sctp-usr");
	if (!st->base.rt) {
		ret = -errno;
		goto fail;
	}
	ret = uiw_rt_call(st->base.rt, create_on_thread, st);
	if (ret) {
		uiw_rt_destroy(st->base.rt);
		goto fail;
	}
	*out = (struct uiw_sctp_stack *)st;
	return 0;
fail:
	pthread_mutex_destroy(&st->qlock);
	free(st);
	return uiw_error(-ret, "usrsctp: cannot start: %s", strerror(-ret));
}

static int destroy_on_thread(void *arg)
{
	struct usr_stack *st = arg;
	struct usr_ev *ev;
	unsigned i;

	uiw_sctp_quiesce_run((struct uiw_sctp_stack *)st);
	/* Users should be gone; what is left goes without upcalls. */
	if (st->assocs || st->lsns)
		UIW_DBG(1, "sctp/usrsctp: stack destroyed in use");
	while (st->assocs)
		assoc_free(st, st->assocs);
	while (st->lsns)
		usr_unlisten((struct uiw_sctp_lsn *)st->lsns);
	while ((ev = ev_pop(st)))
		ev_free(ev);
	for (i = 0; i < USR_LINKS_MAX; i++)
		if (st->slots[i])
			link_free(st, st->slots[i]);
	uiw_rt_timer_stop(st->base.rt, &st->tick);
	uiw_rt_work_cancel(st->base.rt, &st->flush_work);
	atomic_store(&usr_cur, NULL);
	/* usrsctp frees closed sockets from its timers, and finishes only
	 * without sockets; usr_output drops what those timers send. */
	for (i = 0; i < USR_FINISH_MS / USR_TICK_MS; i++) {
		struct timespec ts = { 0, USR_TICK_MS * 1000000L };

		if (usrsctp_finish() == 0) {
			usr_lib_live = false;
			break;
		}
		usrsctp_handle_timers(USR_TICK_MS);
		nanosleep(&ts, NULL);
	}
	if (usr_lib_live)
		UIW_DBG(1, "usrsctp: sockets left after %u ms: the library "
			"stays initialized", USR_FINISH_MS);
	while ((ev = ev_pop(st)))
		ev_free(ev);
	return 0;
}

static void usr_destroy(struct uiw_sctp_stack *s)
{
	struct usr_stack *st = STK(s);

	uiw_rt_call(st->base.rt, destroy_on_thread, st);
	uiw_rt_destroy(st->base.rt);
	pthread_mutex_destroy(&st->qlock);
	free(st);
}

const struct uiw_sctp_ops uiw_sctp_usr_ops = {
	.name = "usrsctp",
	.create = usr_create,
	.destroy = usr_destroy,
	.listen = usr_listen,
	.lsn_addr = usr_lsn_addr,
	.unlisten = usr_unlisten,
	.bind = usr_bind,
	.connect = usr_connect,
	.send = usr_send,
	.unacked = usr_unacked,
	.watch_dry = usr_watch_dry,
	.shutdown = usr_shutdown,
	.abort = usr_abort,
	.buf_free = usr_buf_free,
};
