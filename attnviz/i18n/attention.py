"""Messages of the self- and cross-attention pages, their shared widgets and the scoring functions."""

from __future__ import annotations

from attnviz.i18n import Text as _

ATTENTION: dict[str, _] = {
    # ----- scoring functions (labels and explanations; the formulas are LaTeX, the same in every language) ----
    "score.dot.label": _("Dot product", "点积", "點積"),
    "score.dot.explanation": _(
        "Multiply matching coordinates and add them up. Large when the query and the key point the same way and "
        "are long; no parameters. Queries and keys must have the same size d.",
        "把对应坐标相乘再相加。查询与键方向相同且长度大时得分高；没有参数。查询和键的维度 d 必须相同。",
        "把對應座標相乘再相加。查詢與鍵方向相同且長度大時得分高；沒有參數。查詢和鍵的維度 d 必須相同。",
    ),
    "score.scaled_dot.label": _("Scaled dot product", "缩放点积", "縮放點積"),
    "score.scaled_dot.explanation": _(
        "The Transformer's score: the dot product divided by √d. With d independent unit-variance coordinates a "
        "dot product has variance d, so dividing by √d keeps the softmax from saturating (one weight near 1, the "
        "rest near 0) as d grows.",
        "Transformer 的评分：点积除以 √d。d 个独立、方差为 1 的坐标的点积方差为 d，除以 √d 可以防止 d 变大时 softmax "
        "饱和（一个权重接近 1，其余接近 0）。",
        "Transformer 的評分：點積除以 √d。d 個獨立、變異數為 1 的座標的點積變異數為 d，除以 √d 可以防止 d 變大時 "
        "softmax 飽和（一個權重接近 1，其餘接近 0）。",
    ),
    "score.cosine.label": _("Cosine similarity", "余弦相似度", "餘弦相似度"),
    "score.cosine.explanation": _(
        "The dot product of the unit vectors: only the angle counts, not the length, so scores lie in [−1, 1]. A "
        "zero vector has no direction and scores 0 with every key.",
        "单位向量的点积：只看夹角，不看长度，因此得分在 [−1, 1] 之间。零向量没有方向，与任何键的得分都是 0。",
        "單位向量的點積：只看夾角，不看長度，因此得分在 [−1, 1] 之間。零向量沒有方向，與任何鍵的得分都是 0。",
    ),
    "score.general.label": _("General (Luong)", "一般式（Luong）", "一般式（Luong）"),
    "score.general.explanation": _(
        "A learned bilinear form: W (d_q × d_k) decides which coordinates of the query should match which "
        "coordinates of the key, so queries and keys may have different sizes. W is drawn from the seed here; in a "
        "trained model it is learned.",
        "可学习的双线性形式：W（d_q × d_k）决定查询的哪些坐标应与键的哪些坐标匹配，因此查询和键的维度可以不同。"
        "这里 W 由种子随机生成；在训练好的模型中它是学出来的。",
        "可學習的雙線性形式：W（d_q × d_k）決定查詢的哪些座標應與鍵的哪些座標匹配，因此查詢和鍵的維度可以不同。"
        "這裡 W 由種子隨機產生；在訓練好的模型中它是學出來的。",
    ),
    "score.additive.label": _("Additive (Bahdanau)", "加性（Bahdanau）", "加性（Bahdanau）"),
    "score.additive.explanation": _(
        "A one-hidden-layer network scores each pair: project the query and the key into h hidden units, add, "
        "squash with tanh, and read out one number with w_v. Works for queries and keys of different sizes (d2l's "
        "AdditiveAttention).",
        "用一个单隐藏层网络给每一对打分：把查询和键投影到 h 个隐藏单元，相加，经过 tanh 压缩，再用 w_v 读出一个数。"
        "查询和键的维度可以不同（即 d2l 的 AdditiveAttention）。",
        "用一個單隱藏層網路給每一對打分：把查詢和鍵投影到 h 個隱藏單元，相加，經過 tanh 壓縮，再用 w_v 讀出一個數。"
        "查詢和鍵的維度可以不同（即 d2l 的 AdditiveAttention）。",
    ),
    "score.concat.label": _("Linear on [q; k]", "[q; k] 上的线性层", "[q; k] 上的線性層"),
    "score.concat.explanation": _(
        "One linear layer applied to the query and key stacked into a single vector, as in the study notes' "
        "Softmax(Linear([Q, K])). Being linear, it adds a query part and a key part; the query part is the same for "
        "every key and cancels in the softmax, so only the key part ranks keys.",
        "把查询和键拼成一个向量后接一个线性层，即学习笔记中的 Softmax(Linear([Q, K]))。因为是线性的，它等于查询部分加"
        "键部分；查询部分对每个键都相同，在 softmax 中相互抵消，所以只有键部分决定键的排序。",
        "把查詢和鍵拼成一個向量後接一個線性層，即學習筆記中的 Softmax(Linear([Q, K]))。因為是線性的，它等於查詢部分加"
        "鍵部分；查詢部分對每個鍵都相同，在 softmax 中相互抵消，所以只有鍵部分決定鍵的排序。",
    ),
    "score.concat_tanh.label": _(
        "Sum of tanh(Linear([q; k]))", "tanh(Linear([q; k])) 之和", "tanh(Linear([q; k])) 之和"
    ),
    "score.concat_tanh.explanation": _(
        "The notes' Softmax(sum(tanh(Linear([Q, K])))): a linear layer with h outputs on [q; k], a tanh on each, "
        "and their sum. The tanh mixes query and key, so unlike the plain linear score the ranking of keys can "
        "depend on the query.",
        "笔记中的 Softmax(sum(tanh(Linear([Q, K]))))：在 [q; k] 上接一个有 h 个输出的线性层，每个输出过 tanh，再求和。"
        "tanh 把查询和键混在一起，所以与单纯的线性评分不同，键的排序可以随查询而变。",
        "筆記中的 Softmax(sum(tanh(Linear([Q, K]))))：在 [q; k] 上接一個有 h 個輸出的線性層，每個輸出過 tanh，再求和。"
        "tanh 把查詢和鍵混在一起，所以與單純的線性評分不同，鍵的排序可以隨查詢而變。",
    ),
    "score.gaussian.label": _("Gaussian kernel", "高斯核", "高斯核"),
    "score.gaussian.explanation": _(
        "Closer keys score higher: minus the squared distance, divided by 2σ². After the softmax the weights are "
        "exactly Nadaraya–Watson's Gaussian-kernel weights; σ (bandwidth) sets how far a query looks.",
        "越近的键得分越高：距离平方的相反数除以 2σ²。经过 softmax 后，权重正好是 Nadaraya–Watson 的高斯核权重；"
        "σ（带宽）决定查询看多远。",
        "越近的鍵得分越高：距離平方的相反數除以 2σ²。經過 softmax 後，權重正好是 Nadaraya–Watson 的高斯核權重；"
        "σ（頻寬）決定查詢看多遠。",
    ),
    "param.seed.help": _(
        "Seed of the random generator that draws the learned weights.",
        "生成可学习权重的随机数种子。",
        "產生可學習權重的隨機數種子。",
    ),
    "param.num_hiddens.help": _("Width h of the hidden layer.", "隐藏层的宽度 h。", "隱藏層的寬度 h。"),
    "param.bandwidth.help": _(
        "Kernel width σ: larger σ spreads attention over more keys.",
        "核宽度 σ：σ 越大，注意力分散到越多的键上。",
        "核寬度 σ：σ 越大，注意力分散到越多的鍵上。",
    ),
    # ----- shared widgets -----------------------------------------------------------------------------------
    "widget.scoring_function": _("Scoring function", "评分函数", "評分函數"),
    "widget.seed": _("Seed of the learned weights", "可学习权重的种子", "可學習權重的種子"),
    "widget.hidden_units": _("Hidden units h", "隐藏单元数 h", "隱藏單元數 h"),
    "widget.bandwidth": _("Bandwidth σ", "带宽 σ", "頻寬 σ"),
    "widget.features_of": _("Features (columns) of {name}", "{name}的特征数（列数）", "{name}的特徵數（行數）"),
    "widget.too_many_rows": _(
        "{name} has {count} rows; the limit is {limit}. Remove some rows.",
        "{name}有 {count} 行，上限是 {limit}。请删除一些行。",
        "{name}有 {count} 列，上限是 {limit}。請刪除一些列。",
    ),
    "widget.valid_lengths": _("Valid lengths", "有效长度", "有效長度"),
    "widget.lens_none": _("all keys", "所有键", "所有鍵"),
    "widget.lens_all": _("one length for every query", "所有查询同一长度", "所有查詢同一長度"),
    "widget.lens_per_query": _("one per query", "每个查询一个", "每個查詢一個"),
    "widget.lens_help": _(
        "Keys at index ≥ the valid length are masked: their weight is exactly 0.",
        "下标 ≥ 有效长度的键被掩蔽：它们的权重恰好为 0。",
        "索引 ≥ 有效長度的鍵被遮罩：它們的權重恰好為 0。",
    ),
    "widget.valid_length": _("Valid length", "有效长度", "有效長度"),
    "widget.valid_length_column": _("valid length", "有效长度", "有效長度"),
    "widget.query_n": _("query {n}", "查询 {n}", "查詢 {n}"),
    "widget.bad_length": _(
        "Valid length of query {n} must be a whole number from 0 to {keys}.",
        "查询 {n} 的有效长度必须是 0 到 {keys} 之间的整数。",
        "查詢 {n} 的有效長度必須是 0 到 {keys} 之間的整數。",
    ),
    "widget.share_and_export": _("🔗 Share and export", "🔗 分享与导出", "🔗 分享與匯出"),
    "widget.share": _("🔗 Share this demo", "🔗 分享这个演示", "🔗 分享這個示範"),
    "widget.share_caption": _(
        "Everything on this page is in this link. Copy it (the copy icon on the right), or scan the QR code.",
        "本页的一切都在这个链接里。复制它（右侧的复制图标），或扫描二维码。",
        "本頁的一切都在這個連結裡。複製它（右側的複製圖示），或掃描 QR 碼。",
    ),
    "widget.link_length": _(
        "Link length: {count} characters.", "链接长度：{count} 个字符。", "連結長度：{count} 個字元。"
    ),
    "widget.qr_caption": _("QR code of the link", "链接的二维码", "連結的 QR 碼"),
    "widget.link_too_long": _(
        "This link is too long for a QR code; share it as text.",
        "这个链接太长，无法生成二维码；请以文字分享。",
        "這個連結太長，無法產生 QR 碼；請以文字分享。",
    ),
    "widget.with_numbers": _(
        "**With the numbers** (the table has one row per key):",
        "**代入数字**（表格每个键一行）：",
        "**代入數字**（表格每個鍵一列）：",
    ),
    "widget.batch_row": _("Batch row (0 – {last})", "批次中的第几行（0 – {last}）", "批次中的第幾列（0 – {last}）"),
    "widget.batch_help": _(
        "This preset is a batch of sequences; the page shows one at a time.",
        "这个预设是一批序列；页面一次显示一个。",
        "這個預設是一批序列；頁面一次顯示一個。",
    ),
    "widget.query_row": _("Query row to explain", "要讲解的查询行", "要講解的查詢列"),
    # ----- the self- and cross-attention pages ----------------------------------------------------------------
    "attention.input": _("Input", "输入", "輸入"),
    "attention.input_sentence": _("a sentence", "一句话", "一句話"),
    "attention.input_numbers": _("numbers (a matrix)", "数字（矩阵）", "數字（矩陣）"),
    "attention.sentence": _("Sentence", "句子", "句子"),
    "attention.query_sentence": _("Query sentence (target)", "查询句（目标）", "查詢句（目標）"),
    "attention.sentence_help": _(
        "With seeded embeddings, words, punctuation and each Chinese or Japanese character become tokens and each "
        "token gets a seeded random vector. With the model's embeddings, its WordPiece tokenizer splits the text "
        "and each piece gets its row of the model's input embedding table.",
        "使用种子嵌入时，单词、标点以及每个中文或日文字符都成为词元，每个词元得到一个由种子生成的随机向量。"
        "使用模型嵌入时，由模型的 WordPiece 分词器切分文本，每个片段取模型输入嵌入表中的对应行。",
        "使用種子嵌入時，單詞、標點以及每個中文或日文字元都成為詞元，每個詞元得到一個由種子產生的隨機向量。"
        "使用模型嵌入時，由模型的 WordPiece 斷詞器切分文字，每個片段取模型輸入嵌入表中的對應列。",
    ),
    "attention.source_sentence": _("Source sentence (keys and values)", "源句（键和值）", "源句（鍵和值）"),
    "attention.embeddings": _("Embeddings", "嵌入", "嵌入"),
    "attention.embed_seeded": _("seeded random", "种子随机", "種子隨機"),
    "attention.embed_minilm": _("{model} input embeddings", "{model} 输入嵌入", "{model} 輸入嵌入"),
    "attention.embeddings_help": _(
        "Seeded random vectors show the mechanism with small numbers. The pretrained model's input embeddings (384 "
        "numbers a token) place related words close together: try the cosine score.",
        "种子随机向量用小数字展示机制。预训练模型的输入嵌入（每个词元 384 个数）让相关的词彼此靠近：试试余弦评分。",
        "種子隨機向量用小數字展示機制。預訓練模型的輸入嵌入（每個詞元 384 個數）讓相關的詞彼此靠近：試試餘弦評分。",
    ),
    "attention.model_dim": _("d = 384, fixed by the model", "d = 384，由模型决定", "d = 384，由模型決定"),
    "attention.embedding_size": _("Embedding size d", "嵌入维度 d", "嵌入維度 d"),
    "attention.embedding_seed": _("Embedding seed", "嵌入种子", "嵌入種子"),
    "attention.tokens_x": _("Tokens x", "词元 x", "詞元 x"),
    "attention.tokens_x_help": _(
        "Rows are tokens, columns are features. Self-attention uses x as queries, keys and values.",
        "行是词元，列是特征。自注意力把 x 同时用作查询、键和值。",
        "列是詞元，行是特徵。自注意力把 x 同時用作查詢、鍵和值。",
    ),
    "attention.queries": _("Queries", "查询", "查詢"),
    "attention.keys": _("Keys", "键", "鍵"),
    "attention.values": _("Values", "值", "值"),
    "attention.matrix_help": _(
        "Rows are {what}, columns their features.",
        "行是{what}，列是它们的特征。",
        "列是{what}，行是它們的特徵。",
    ),
    "attention.temperature": _("Temperature T", "温度 T", "溫度 T"),
    "attention.temperature_help": _(
        "Logits are divided by T: small T sharpens the weights, large T flattens them.",
        "logit 除以 T：T 小时权重更尖锐，T 大时权重更平坦。",
        "logit 除以 T：T 小時權重更尖銳，T 大時權重更平坦。",
    ),
    "attention.causal": _(
        "Causal mask (query i sees keys 1…i)", "因果掩码（查询 i 只看键 1…i）", "因果遮罩（查詢 i 只看鍵 1…i）"
    ),
    "attention.predict": _("Predict, then reveal", "先预测，再揭晓", "先預測，再揭曉"),
    "attention.predict_help": _(
        "Hide the weights until you have guessed one query row's weights; then see your guess beside the truth.",
        "在你猜出一个查询行的权重之前隐藏权重；之后把你的猜测和真实值并排显示。",
        "在你猜出一個查詢列的權重之前隱藏權重；之後把你的猜測和真實值並排顯示。",
    ),
    "attention.predict_heading": _("Your prediction", "你的预测", "你的預測"),
    "attention.predict_caption": _(
        "How much weight does '{query}' give each key? Type a number for every key (they are rescaled to sum to "
        "1), then reveal.",
        "'{query}' 给每个键多少权重？为每个键输入一个数（会自动缩放使总和为 1），然后揭晓。",
        "'{query}' 給每個鍵多少權重？為每個鍵輸入一個數（會自動縮放使總和為 1），然後揭曉。",
    ),
    "attention.guess_needed": _(
        "Every key needs a number ≥ 0, and at least one above 0.",
        "每个键都需要一个 ≥ 0 的数，且至少有一个大于 0。",
        "每個鍵都需要一個 ≥ 0 的數，且至少有一個大於 0。",
    ),
    "attention.guess_input": _(
        "Your weights for the {count} keys, separated by commas",
        "你给 {count} 个键的权重，用逗号分隔",
        "你給 {count} 個鍵的權重，用逗號分隔",
    ),
    "attention.guess_order": _("In this order: {keys}", "按这个顺序：{keys}", "按這個順序：{keys}"),
    "attention.guess_count": _(
        "{count} numbers typed; there are {keys} keys.",
        "输入了 {count} 个数；共有 {keys} 个键。",
        "輸入了 {count} 個數；共有 {keys} 個鍵。",
    ),
    "attention.reveal": _("Reveal", "揭晓", "揭曉"),
    "attention.guess_title": _(
        "Your guess and the true weights of '{query}'",
        "你的猜测与 '{query}' 的真实权重",
        "你的猜測與 '{query}' 的真實權重",
    ),
    "attention.guess_distance": _(
        "Total variation distance between your guess and the truth: {distance} (0 = exact, 1 = nothing in common).",
        "你的猜测与真实值之间的总变差距离：{distance}（0 = 完全一致，1 = 毫无重合）。",
        "你的猜測與真實值之間的總變差距離：{distance}（0 = 完全一致，1 = 毫無重合）。",
    ),
    "attention.more": _(
        "More: heads, projections, comparison, predict", "更多：多头、投影、比较、预测", "更多：多頭、投影、比較、預測"
    ),
    "attention.projection_identity": _("identity", "单位矩阵", "單位矩陣"),
    "attention.projection_random": _("seeded random", "种子随机", "種子隨機"),
    "attention.projection_seed": _("Projection seed", "投影种子", "投影種子"),
    "attention.heads": _("Heads", "头数", "頭數"),
    "attention.heads_help": _(
        "The feature size must be divisible by the number of heads.",
        "特征维度必须能被头数整除。",
        "特徵維度必須能被頭數整除。",
    ),
    "attention.residual": _(
        "Add the result to the queries (E + ΔE)", "把结果加到查询上（E + ΔE）", "把結果加到查詢上（E + ΔE）"
    ),
    "attention.compare": _("Compare with another score", "与另一种评分比较", "與另一種評分比較"),
    "attention.off": _("— off —", "— 关闭 —", "— 關閉 —"),
    "attention.weights_title": _("{score}: attention weights", "{score}：注意力权重", "{score}：注意力權重"),
    "attention.head_n": _("head {n}", "头 {n}", "頭 {n}"),
    "attention.mean_title": _("Average of the heads' weights", "各头权重的平均", "各頭權重的平均"),
    "attention.raw": _(
        "The numbers: the charts as tables, raw scores and outputs",
        "数字：图表的表格版、原始分数和输出",
        "數字：圖表的表格版、原始分數和輸出",
    ),
    "attention.raw_title": _("Raw scores a(q, k)", "原始分数 a(q, k)", "原始分數 a(q, k)"),
    "attention.raw_title_head1": _(
        "Raw scores a(q, k) (head 1)", "原始分数 a(q, k)（头 1）", "原始分數 a(q, k)（頭 1）"
    ),
    "attention.output_residual": _("Output E + ΔE", "输出 E + ΔE", "輸出 E + ΔE"),
    "attention.output": _("Output (attention-weighted values)", "输出（按注意力加权的值）", "輸出（按注意力加權的值）"),
    "attention.comparison_error": _(
        "Comparison with {score}: {error}", "与{score}比较：{error}", "與{score}比較：{error}"
    ),
    "attention.side_by_side": _("Two scoring functions side by side", "两种评分函数并排比较", "兩種評分函數並排比較"),
    "attention.show_work": _("Show your work", "逐步演算", "逐步演算"),
    "attention.head": _("Head", "头", "頭"),
    "attention.export_caption": _(
        "PNG: use the camera icon of any chart. CSV: scores and weights of head 1. Python: the code that recomputes "
        "this page with attnviz.",
        "PNG：点击任意图表的相机图标。CSV：头 1 的分数和权重。Python：用 attnviz 重新计算本页的代码。",
        "PNG：點擊任意圖表的相機圖示。CSV：頭 1 的分數和權重。Python：用 attnviz 重新計算本頁的程式碼。",
    ),
    "attention.download_csv": _("Download scores and weights (CSV)", "下载分数和权重（CSV）", "下載分數和權重（CSV）"),
    "attention.preset": _("Preset from the study notes", "学习笔记中的预设", "學習筆記中的預設"),
    "attention.no_preset": _("— none —", "— 无 —", "— 無 —"),
    "attention.repeated_tokens": _(
        "Repeated tokens are numbered (·2, ·3…) on the axes so each keeps its own row.",
        "重复的词元在坐标轴上加了编号（·2、·3…），使每个词元各占一行。",
        "重複的詞元在座標軸上加了編號（·2、·3…），使每個詞元各占一列。",
    ),
}
