// Vite's `?raw` imports (https://vite.dev/guide/assets#importing-asset-as-string): the file's
// text, read when the page is built. The accuracy panel reads tests/validation/published.json so.
declare module '*?raw' {
  const text: string;
  export default text;
}
