// What the page decides before a text reaches the core's importers (src/import_text.ts).
import { describe, expect, it } from 'vitest';
import { clusterForImport, oversizeMessage, recogniseText, withImportedModel } from '../../src/import_text';

describe('recognising a pasted or opened text', () => {
  it('tells a Proteus config, an HF config.json and Megatron arguments apart', () => {
    expect(recogniseText('  {"model": "llama3-8b"}\n')).toEqual({ kind: 'config', config: { model: 'llama3-8b' } });
    expect(recogniseText('{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}').kind).toBe('hf');
    expect(recogniseText('--num-layers 32 --hidden-size 4096').kind).toBe('megatron');
    expect(recogniseText('#!/bin/bash\ntorchrun pretrain_gpt.py --num-layers 2').kind).toBe('megatron');
  });

  it('names where a JSON text goes wrong, and refuses an empty text or a JSON array', () => {
    const cut = recogniseText('{"model": "llama3-8b",\n "cluster": ');
    expect(cut.kind).toBe('invalid');
    if (cut.kind === 'invalid') expect(cut.message).toMatch(/^Invalid JSON: line 2, column/);
    expect(recogniseText(' \n\t')).toEqual({ kind: 'invalid', message: 'the text is empty' });
    expect(recogniseText('{"a": 1}').kind).toBe('config');
    expect(recogniseText('[1]').kind).toBe('megatron'); // not JSON-object-like: the importer names the argument
  });
});

describe('the size limit', () => {
  const limit = 16 * 1048576;
  it('refuses only what is over the limit, saying both sizes', () => {
    expect(oversizeMessage(limit, limit, 'x')).toBeNull();
    // 100 MiB = 104857600 units: over 16 MiB = 16777216 bytes.
    expect(oversizeMessage(100 * 1048576, limit, 'The pasted text')).toBe('The pasted text is 100.0 MiB; the simulator reads at most 16.0 MiB (16777216 bytes), so it was not read');
    expect(oversizeMessage(limit + 1, limit, 'x')).not.toBeNull();
    expect(oversizeMessage(1e9, 0, 'x')).toBeNull(); // limit unknown: the core checks
  });
});

describe('the run around an import', () => {
  it('gives Megatron arguments the page cluster with its node count', () => {
    expect(clusterForImport({ cluster: 'dgx-h100' }, 4)).toEqual({ preset: 'dgx-h100', nodes: 4 });
    expect(clusterForImport({ cluster: { preset: 'dgx-h100', nodes: 2 } }, 4)).toEqual({ preset: 'dgx-h100', nodes: 2 });
    expect(clusterForImport({ cluster: { preset: 'dgx-h100' } }, 3)).toEqual({ preset: 'dgx-h100', nodes: 3 });
    expect(clusterForImport({}, 3)).toBeNull();
  });

  it('replaces only the model for a config.json, and drops the old scenario name', () => {
    const cur = { name: 'Llama on H100', description: 'd', model: 'llama3-8b', cluster: 'dgx-h100', strategy: { tp: 2 } };
    expect(withImportedModel(cur, { model: { layers: 36 } })).toEqual({ model: { layers: 36 }, cluster: 'dgx-h100', strategy: { tp: 2 } });
  });
});
