import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A throwaway self-signed certificate for one host name (openssl), for fakes that must answer
 * HTTPS under a real upstream name. The child under test trusts it through NODE_EXTRA_CA_CERTS.
 */
export const selfSignedCertificate = async (
  host: string,
): Promise<{ key: string; cert: string; certFile: string; dir: string }> => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-tls-'));
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${host}`,
      '-addext',
      `subjectAltName=DNS:${host}`,
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'pipe' },
  );
  return { key: await readFile(keyFile, 'utf8'), cert: await readFile(certFile, 'utf8'), certFile, dir };
};
