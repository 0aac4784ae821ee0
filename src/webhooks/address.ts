import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Whether an address is one a webhook may reach without WEBHOOK_ALLOW_PRIVATE_NETWORKS: only
 * ipaddr.js's `unicast` range, which is what is left once loopback, private, link-local, unique
 * local, carrier-grade NAT, multicast, broadcast, documentation, benchmarking, 6to4, Teredo,
 * NAT64 and the other reserved ranges are taken out. An IPv4-mapped IPv6 address is judged as
 * the IPv4 address it maps.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === 'unicast';
}

export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';
}

// The address itself is not said: the delivery log is the client's to read, and which private
// address an internal name has is the operator's business, not the client's.
const refusal = (host: string) =>
  new BlockedAddressError(`${host} resolves to a private or reserved address (WEBHOOK_ALLOW_PRIVATE_NETWORKS is off)`);

/**
 * A `lookup` for the sockets of deliveries: it resolves as usual, then refuses the connection when
 * any resolved address is not public. The socket connects to the addresses this returns, so the
 * check is made on the address actually connected to, at delivery time: a name that resolved to a
 * public address when the endpoint was saved and to 127.0.0.1 now (DNS rebinding) is refused.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return (callback as (e: Error) => void)(error);
    const blocked = addresses.find((a) => !isPublicAddress(a.address));
    if (blocked || addresses.length === 0) return (callback as (e: Error) => void)(refusal(hostname));
    if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
    return (callback as (e: null, a: string, f: number) => void)(null, addresses[0].address, addresses[0].family);
  });
};

/** An IP literal in a URL's host (`[::1]`, `127.0.0.1`): sockets skip `lookup` for those, so they are checked here. */
export function literalAddressOf(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : null;
}

/** Refuses an IP literal that is not public; names are checked when they are resolved. */
export function checkLiteralHost(hostname: string): void {
  const literal = literalAddressOf(hostname);
  if (literal !== null && !isPublicAddress(literal)) throw refusal(hostname);
}
