// Serves web/dist on 127.0.0.1 (port from $PORT, default 8080) and prints the address.
import { startStaticServer } from './static-server.mjs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const port = Number(process.env.PORT ?? 8080);
const server = await startStaticServer(root, port);
console.log(`Proteus page: ${server.url}  (serving ${root}; Ctrl+C to stop)`);
