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
