// tls_ciphers, as Octavia's API takes it: one colon-separated list that may
// hold TLS 1.2-and-older cipher names and TLS 1.3 ciphersuite names alike
// (Octavia's default, OWASP suite B, has both). OpenSSL keeps them apart
// (SSL_CTX_set_cipher_list vs SSL_CTX_set_ciphersuites), so haproxy needs
// them as `ciphers` and `ciphersuites`; Octavia 19 splits the list the same way.

/**
 * The TLS 1.3 ciphersuites OpenSSL knows: Octavia's default
 * [api_settings] tls1_3_supported_ciphers.
 */
export const TLS13_CIPHERSUITES: readonly string[] = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_AES_128_CCM_SHA256',
  'TLS_AES_128_CCM_8_SHA256',
];

export interface SplitCiphers {
  /** For TLS <= 1.2 (`ciphers`), in the order given: the order is the server's preference. */
  legacy: string[];
  /** TLS 1.3 ciphersuites (`ciphersuites`), in the order given. */
  tls13: string[];
}

export function splitCiphers(list: string): SplitCiphers {
  const names = [...new Set(list.split(':').filter(Boolean))];
  return {
    legacy: names.filter((c) => !TLS13_CIPHERSUITES.includes(c)),
    tls13: names.filter((c) => TLS13_CIPHERSUITES.includes(c)),
  };
}

/** Which of the two lists the allowed versions use (no tls_versions: every version). */
export function versionsUse(versions: readonly string[] | undefined): { legacy: boolean; tls13: boolean } {
  if (versions === undefined) return { legacy: true, tls13: true };
  return { legacy: versions.some((v) => v !== 'TLSv1.3'), tls13: versions.includes('TLSv1.3') };
}
