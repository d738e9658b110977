/*
 * uiwarp's own connection options (<uiwarp/rdma_option.h>): set with
 * rdma_set_option, else read from the environment when a connection or
 * listener starts, else the defaults.  One row per option says its
 * rdma_set_option size, its variable, its range and how its text reads.
 * Bad values are refused with EINVAL and a debug line, never ignored.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cma.h"

typedef int (*opt_parse_fn)(const char *s, unsigned *v);

struct opt_row {
	const char *env;
	size_t len;          /* rdma_set_option's optlen */
	unsigned min, max;
	unsigned def;
	opt_parse_fn parse;  /* the variable's text; NULL: a decimal number */
};

static const struct {
	const char *name;
	unsigned val;
} llp_names[] = {
	{ "tcp", UIW_LLP_TCP },
	{ "sctp", UIW_LLP_SCTP },
	{ "sctp-udp", UIW_LLP_SCTP_UDP },
	{ "sctp-kernel", UIW_LLP_SCTP_KERNEL },
};

static int parse_llp(const char *s, unsigned *v)
{
	for (size_t i = 0; i < sizeof(llp_names) / sizeof(llp_names[0]); i++) {
		if (!strcasecmp(s, llp_names[i].name)) {
			*v = llp_names[i].val;
			return 0;
		}
	}
	return -EINVAL;
}

/* A comma list of send, write, read (RFC 6581 §9.2's three RTRs). */
static int parse_rtr(const char *s, unsigned *v)
{
	static const struct { const char *name; unsigned flag; } rtr[] = {
		{ "send", UIW_RTR_SEND },
		{ "write", UIW_RTR_WRITE },
		{ "read", UIW_RTR_READ },
	};
	unsigned flags = 0;

	while (*s) {
		size_t n = strcspn(s, ",");
		unsigned f = 0;

		for (size_t i = 0; i < sizeof(rtr) / sizeof(rtr[0]); i++)
			if (n == strlen(rtr[i].name) &&
			    !strncasecmp(s, rtr[i].name, n))
				f = rtr[i].flag;
		if (!f)
			return -EINVAL;
		flags |= f;
		s += n;
		if (*s == ',' && *++s == '\0')
			return -EINVAL;
	}
	if (!flags)
		return -EINVAL;
	*v = flags;
	return 0;
}

static const struct opt_row opt_rows[CMA_OPT_MAX + 1] = {
	[UIW_RDMA_OPT_MPA_REV] = { "UIWARP_MPA_REV", sizeof(uint8_t), 1, 2,
				   2, NULL },
	[UIW_RDMA_OPT_CRC] = { "UIWARP_CRC", sizeof(int), 0, 1, 1, NULL },
	[UIW_RDMA_OPT_MARKERS] = { "UIWARP_MARKERS", sizeof(int), 0, 1, 0,
				   NULL },
	/* On by default: programs whose server sends first (ib_write_lat)
	 * would otherwise stall, RFC 5044 §7.1.2 (uiwarp-rdma(7)). */
	[UIW_RDMA_OPT_P2P] = { "UIWARP_P2P", sizeof(int), 0, 1, 1, NULL },
	[UIW_RDMA_OPT_RTR] = { "UIWARP_RTR", sizeof(uint8_t), 1, UIW_RTR_ALL,
			       UIW_RTR_ALL, parse_rtr },
	[UIW_RDMA_OPT_START_DELAY_MS] = { "UIWARP_START_DELAY_MS",
					  sizeof(uint16_t), 0,
					  UIW_START_DELAY_MAX_MS,
					  UIW_RDMA_DEFAULT_START_DELAY_MS,
					  NULL },
	[UIW_RDMA_OPT_LLP] = { "UIWARP_LLP", sizeof(int), UIW_LLP_TCP,
			       UIW_LLP_SCTP_KERNEL, UIW_LLP_TCP, parse_llp },
	/* 0: the uiw_ default ($UIW_SCTP_UDP_PORT, else 9899) */
	[UIW_RDMA_OPT_UDP_PORT] = { "UIWARP_UDP_PORT", sizeof(uint16_t), 1,
				    65535, 0, NULL },
};

static int parse_number(const char *s, unsigned *v)
{
	char *end;
	unsigned long n;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno || *end || n > 0xffffffffUL)
		return -EINVAL;
	*v = (unsigned)n;
	return 0;
}

int cma_opt_set(struct cma_opts *o, int name, const void *val, size_t len)
{
	const struct opt_row *r;
	unsigned v;

	if (name < 1 || name > CMA_OPT_MAX) {
		uiw_compat_log("rdma_set_option: no uiwarp option %d", name);
		return -ENOSYS;
	}
	r = &opt_rows[name];
	if (!val || len != r->len) {
		uiw_compat_log("rdma_set_option: %s takes %zu octets, not %zu",
			       r->env, r->len, len);
		return -EINVAL;
	}
	switch (r->len) {
	case sizeof(uint8_t):
		v = *(const uint8_t *)val;
		break;
	case sizeof(uint16_t):
		v = *(const uint16_t *)val;
		break;
	default: {
		int i = *(const int *)val;

		if (i < 0) {
			uiw_compat_log("rdma_set_option: %s %d is negative",
				       r->env, i);
			return -EINVAL;
		}
		v = (unsigned)i;
	}
	}
	if (v < r->min || v > r->max) {
		uiw_compat_log("rdma_set_option: %s %u out of range %u..%u",
			       r->env, v, r->min, r->max);
		return -EINVAL;
	}
	o->val[name] = v;
	o->set |= 1u << name;
	return 0;
}

int cma_opt_resolve(const struct cma_opts *o, struct cma_opts *out)
{
	*out = *o;
	for (int n = 1; n <= CMA_OPT_MAX; n++) {
		const struct opt_row *r = &opt_rows[n];
		const char *s;
		unsigned v;

		if (o->set & (1u << n))
			continue;
		s = getenv(r->env);
		if (!s) {
			out->val[n] = r->def;
			continue;
		}
		if ((r->parse ? r->parse : parse_number)(s, &v) < 0 ||
		    v < r->min || v > r->max) {
			uiw_compat_log("%s=\"%s\" is not valid (see "
				       "uiwarp-rdma(7))", r->env, s);
			return -EINVAL;
		}
		out->val[n] = v;
		out->set |= 1u << n;
	}
	/* RFC 6581 §9.2: peer-to-peer mode is negotiated in the enhanced
	 * (revision 2) startup only.  Under revision 1 the default gives
	 * way; asked for, it is an error. */
	if (out->val[UIW_RDMA_OPT_MPA_REV] == 1 &&
	    out->val[UIW_RDMA_OPT_P2P]) {
		if (out->set & (1u << UIW_RDMA_OPT_P2P)) {
			uiw_compat_log("peer-to-peer mode (UIWARP_P2P=1) needs "
				       "MPA revision 2, not 1");
			return -EINVAL;
		}
		out->val[UIW_RDMA_OPT_P2P] = 0;
	}
	return 0;
}

static enum uiw_opt opt_onoff(unsigned v)
{
	return v ? UIW_OPT_ON : UIW_OPT_OFF;
}

void cma_opt_conn_param(const struct cma_opts *eff, bool initiator,
			struct uiw_conn_param *p)
{
	p->llp = (enum uiw_llp_kind)eff->val[UIW_RDMA_OPT_LLP];
	p->udp_port = (uint16_t)eff->val[UIW_RDMA_OPT_UDP_PORT];
	p->crc = opt_onoff(eff->val[UIW_RDMA_OPT_CRC]);
	p->markers = opt_onoff(eff->val[UIW_RDMA_OPT_MARKERS]);
	p->rtr = (uint8_t)eff->val[UIW_RDMA_OPT_RTR];
	if (!initiator)
		return;     /* the responder follows the Request's revision
			       and mode (RFC 6581 §10) */
	p->mpa_rev = (uint8_t)eff->val[UIW_RDMA_OPT_MPA_REV];
	p->p2p = opt_onoff(eff->val[UIW_RDMA_OPT_P2P]);
	/* RFC 5043 has no MPA startup to delay */
	if (p->llp == UIW_LLP_TCP)
		p->start_delay_ms =
			(uint16_t)eff->val[UIW_RDMA_OPT_START_DELAY_MS];
}
