"""Four models written in plain PyTorch style, each built against a module `torch` that is either
PyTorch or minitorch (`test_pytorch_style_models_torch.py` builds both and compares them):
a GPT (nanoGPT-style), a text CNN (Kim), a character-level LSTM and a word-level GRU language
model (PyTorch's word_language_model example). Nothing here knows which library it runs on.

Written as such files are, with one change kept on purpose: `init_hidden` of the word model
reads its dtype from `self.encoder.weight` instead of `next(self.parameters())`, because
`Module.parameters()` returns a list here (task 0.3) rather than a generator.
"""

import math


def build_gpt(torch):
    nn = torch.nn
    F = torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, n_embd, n_head, block_size):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.n_head, self.n_embd = n_head, n_embd
            self.register_buffer(
                "bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
            )

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self, n_embd):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self, n_embd, n_head, block_size):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention(n_embd, n_head, block_size)
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP(n_embd)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8):
            super().__init__()
            self.transformer = nn.ModuleDict(
                dict(
                    wte=nn.Embedding(vocab_size, n_embd),
                    wpe=nn.Embedding(block_size, n_embd),
                    h=nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)]),
                    ln_f=nn.LayerNorm(n_embd),
                )
            )
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    return GPT


def build_textcnn(torch):
    nn, F = torch.nn, torch.nn.functional

    class TextCNN(nn.Module):
        def __init__(self, vocab=20, dim=6, filters=4, sizes=(2, 3), classes=2):
            super().__init__()
            self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
            self.convs = nn.ModuleList([nn.Conv1d(dim, filters, k) for k in sizes])
            self.dropout = nn.Dropout(0.5)
            self.fc = nn.Linear(filters * len(sizes), classes)

        def forward(self, x):
            x = self.embedding(x).permute(0, 2, 1)  # [B, D, T]
            pooled = [F.relu(conv(x)).max(dim=2)[0] for conv in self.convs]
            return self.fc(self.dropout(torch.cat(pooled, dim=1)))

    return TextCNN


def build_char_rnn(torch):
    nn = torch.nn

    class CharRNN(nn.Module):
        def __init__(self, vocab=15, hidden=8, layers=2):
            super().__init__()
            self.hidden, self.layers = hidden, layers
            self.embed = nn.Embedding(vocab, hidden)
            self.lstm = nn.LSTM(hidden, hidden, layers, batch_first=True)
            self.out = nn.Linear(hidden, vocab)

        def init_hidden(self, batch):
            return (
                torch.zeros(self.layers, batch, self.hidden, dtype=torch.double),
                torch.zeros(self.layers, batch, self.hidden, dtype=torch.double),
            )

        def forward(self, x, hidden):
            output, hidden = self.lstm(self.embed(x), hidden)
            return self.out(output.reshape(-1, self.hidden)), hidden

    return CharRNN


def build_word_lm(torch):
    nn, F = torch.nn, torch.nn.functional

    class RNNModel(nn.Module):
        def __init__(self, ntoken=30, ninp=8, nhid=8, nlayers=2, dropout=0.0, rnn_type="GRU"):
            super().__init__()
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            self.nhid, self.nlayers, self.ntoken = nhid, nlayers, ntoken
            self.init_weights()

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output).view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = self.encoder.weight
            return weight.new_zeros((self.nlayers, bsz, self.nhid))

    return RNNModel
