/* DDP over SCTP on the wire (RFC 5043 §5.2, RFC 6581 §7): ddps.h. */
#include <errno.h>
#include <string.h>

#include "ddps.h"

const char *uiw_ddps_fc_name(uint16_t fc)
{
	switch (fc) {
	case UIW_DDPS_INITIATE:   return "Initiate";
	case UIW_DDPS_ACCEPT:     return "Accept";
	case UIW_DDPS_REJECT:     return "Reject";
	case UIW_DDPS_TERMINATE:  return "Terminate";
	case UIW_DDPS_E_INITIATE: return "Enhanced Initiate";
	case UIW_DDPS_E_ACCEPT:   return "Enhanced Accept";
	case UIW_DDPS_E_REJECT:   return "Enhanced Reject";
	}
	return "unknown";
}

bool uiw_ddps_fc_has_v2(uint16_t fc)
{
	return fc == UIW_DDPS_E_INITIATE || fc == UIW_DDPS_E_ACCEPT ||
	       fc == UIW_DDPS_E_REJECT;
}

int uiw_ddps_ctl_decode(const uint8_t *buf, size_t len,
			struct uiw_ddps_ctl *c, const char **why)
{
	size_t pd;

	memset(c, 0, sizeof(*c));
	if (len < UIW_DDPS_CTL_HDR) {
		*why = "session control message shorter than its DDP-SSN "
		       "and Function Code";
		return -EPROTO;
	}
	c->ssn = uiw_ddps_ssn(buf);
	c->fc = (uint16_t)(buf[2] << 8 | buf[3]);
	pd = len - UIW_DDPS_CTL_HDR;
	if (c->fc < UIW_DDPS_INITIATE || c->fc > UIW_DDPS_E_REJECT) {
		*why = "unknown session control Function Code";
		return -EPROTO;
	}
	if (pd > UIW_DDPS_PD_MAX) {
		*why = "session control private data over 512 octets "
		       "(RFC 5043 §5.2.3)";
		return -EPROTO;
	}
	if (c->fc == UIW_DDPS_TERMINATE && pd) {
		*why = "Session Terminate with private data (RFC 5043 "
		       "§5.2.3)";
		return -EPROTO;
	}
	c->enhanced = c->fc >= UIW_DDPS_E_INITIATE;
	c->pd = buf + UIW_DDPS_CTL_HDR;
	if (uiw_ddps_fc_has_v2(c->fc)) {
		if (pd < UIW_MPA_V2_LEN) {
			*why = "enhanced session control message without "
			       "its IRD/ORD word (RFC 6581 §7)";
			return -EPROTO;
		}
		uiw_mpa_v2_decode(c->pd, &c->v2);
		c->has_v2 = true;
		c->pd += UIW_MPA_V2_LEN;
		pd -= UIW_MPA_V2_LEN;
	}
	c->pd_len = (uint16_t)pd;
	return 0;
}

int uiw_ddps_ctl_encode(uint8_t *out, uint16_t ssn, uint16_t fc,
			const struct uiw_mpa_v2 *v2, const void *pd,
			uint16_t pd_len)
{
	size_t n = UIW_DDPS_CTL_HDR;
	bool word = uiw_ddps_fc_has_v2(fc);

	if (fc < UIW_DDPS_INITIATE || fc > UIW_DDPS_E_REJECT ||
	    (fc == UIW_DDPS_TERMINATE && pd_len) || (word && !v2))
		return -EINVAL;
	if ((size_t)pd_len + (word ? UIW_MPA_V2_LEN : 0) > UIW_DDPS_PD_MAX)
		return -EMSGSIZE;
	uiw_ddps_put_ssn(out, ssn);
	out[2] = (uint8_t)(fc >> 8);
	out[3] = (uint8_t)fc;
	if (word) {
		uiw_mpa_v2_encode(out + n, v2);
		n += UIW_MPA_V2_LEN;
	}
	if (pd_len)
		memcpy(out + n, pd, pd_len);
	return (int)(n + pd_len);
}
