import { BlockList, isIP } from 'node:net';

/** Addresses a key may be used from: IPv4/IPv6 CIDRs or single addresses, matched against `request.ip` (TRUST_PROXY). */
export const MAX_CIDRS = 50;

/** Parses `10.0.0.0/8, 2001:db8::/32, 203.0.113.7`; throws naming what is wrong. */
export function parseCidrs(text: string): string[] {
  const entries = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (entries.length === 0)
    throw new Error('Give at least one address or CIDR, for example 203.0.113.0/24,2001:db8::/32');
  if (entries.length > MAX_CIDRS) throw new Error(`At most ${MAX_CIDRS} addresses or CIDRs`);
  return [...new Set(entries.map(cidrOf))];
}

function cidrOf(entry: string): string {
  const [address, bits, ...rest] = entry.split('/');
  const family = isIP(address);
  const max = family === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (family === 0 || rest.length > 0 || !(prefix >= 0 && prefix <= max)) {
    throw new Error(`Not an IPv4 or IPv6 address or CIDR: ${entry.slice(0, 60)}`);
  }
  return `${address.toLowerCase()}/${prefix}`;
}

const lists = new Map<string, BlockList>();

/** IPv4-mapped IPv6 counts as IPv4. */
export function addressAllowed(cidrs: readonly string[], ip: string): boolean {
  const cacheKey = cidrs.join(',');
  let list = lists.get(cacheKey);
  if (!list) {
    list = new BlockList();
    for (const cidr of cidrs) {
      const [address, prefix] = cidr.split('/');
      list.addSubnet(address, Number(prefix), isIP(address) === 4 ? 'ipv4' : 'ipv6');
    }
    if (lists.size > 1000) lists.clear();
    lists.set(cacheKey, list);
  }
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const address = mapped ? mapped[1] : ip;
  const family = isIP(address);
  return family !== 0 && list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}
