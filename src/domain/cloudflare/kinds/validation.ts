/** Field checks shared by the source kinds (pure: ipaddr.js is plain JavaScript). */
import ipaddr from 'ipaddr.js';

export const HOSTNAME =
  /^(?=.{1,253}$)(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;

/** An IP address or a CIDR block. */
export function validAddress(address: string): boolean {
  if (address.includes('/')) {
    try {
      ipaddr.parseCIDR(address);
      return true;
    } catch {
      return false;
    }
  }
  return ipaddr.isValid(address);
}

export function validIp(ip: string): boolean {
  return ipaddr.isValid(ip);
}

/**
 * An address as Cloudflare stores a split-tunnel entry's: CIDR ("the address in CIDR format"), a
 * bare IP as its one-host block (`/32`, `/128`); anything not an address is returned as it is.
 */
export function cidrOf(address: string): string {
  try {
    if (address.includes('/')) {
      const [ip, bits] = ipaddr.parseCIDR(address);
      return `${ip.toString()}/${bits}`;
    }
    const ip = ipaddr.parse(address);
    return `${ip.toString()}/${ip.kind() === 'ipv4' ? 32 : 128}`;
  } catch {
    return address;
  }
}
