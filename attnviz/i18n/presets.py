"""The study notes' presets: titles, sources and descriptions."""

from __future__ import annotations

from attnviz.i18n import Text as _

PRESETS: dict[str, _] = {
    "preset.waist_weight.title": _(
        "Waist → weight (1-D kernel regression)", "腰围 → 体重（一维核回归）", "腰圍 → 體重（一維核迴歸）"
    ),
    "preset.waist_weight.source": _(
        "Attention Score note, 一维样本", "Attention Score 笔记，一维样本", "Attention Score 筆記，一維樣本"
    ),
    "preset.waist_weight.description": _(
        "Keys are waists 51, 56, 58 and values weights 40, 43, 48. A query of 57 sits halfway between 56 and 58, so "
        "the Gaussian kernel gives them weight ½ each, 51 almost nothing, and the prediction is (43 + 48) / 2 = 45.5.",
        "键是腰围 51、56、58，值是体重 40、43、48。查询 57 正好在 56 和 58 中间，所以高斯核给它们各 ½ 的权重，51 几乎为零，"
        "预测值为 (43 + 48) / 2 = 45.5。",
        "鍵是腰圍 51、56、58，值是體重 40、43、48。查詢 57 正好在 56 和 58 中間，所以高斯核給它們各 ½ 的權重，51 幾乎為零，"
        "預測值為 (43 + 48) / 2 = 45.5。",
    ),
    "preset.waist_chest_2d.title": _(
        "(Waist, chest) → (weight, height) with dot-product scores",
        "（腰围，胸围）→（体重，身高），点积评分",
        "（腰圍，胸圍）→（體重，身高），點積評分",
    ),
    "preset.waist_chest_2d.source": _(
        "Attention Score note, 二维样本", "Attention Score 笔记，二维样本", "Attention Score 筆記，二維樣本"
    ),
    "preset.waist_chest_2d.description": _(
        "Two-dimensional keys (waist, chest) and values (weight, height) as printed in the note (the second and "
        "third keys are equal), queried with (57, 83) and (55, 76) under the plain dot product. Raw dot products of "
        "such large numbers differ by hundreds, so the softmax is one-hot in effect: try scaled_dot or a higher "
        "temperature to soften it.",
        "笔记中给出的二维键（腰围，胸围）和值（体重，身高）（第二、三个键相同），用普通点积以 (57, 83) 和 (55, 76) 查询。"
        "这么大的数的点积相差数百，softmax 实际上变成独热：试试缩放点积或更高的温度让它变软。",
        "筆記中給出的二維鍵（腰圍，胸圍）和值（體重，身高）（第二、三個鍵相同），用普通點積以 (57, 83) 和 (55, 76) 查詢。"
        "這麼大的數的點積相差數百，softmax 實際上變成獨熱：試試縮放點積或更高的溫度讓它變軟。",
    ),
    "preset.d2l_additive.title": _(
        "d2l: additive attention with valid lengths [2, 6]",
        "d2l：加性注意力，有效长度 [2, 6]",
        "d2l：加性注意力，有效長度 [2, 6]",
    ),
    "preset.d2l_additive.source": _(
        "Attention Score Code note (d2l 10.3)",
        "Attention Score Code 笔记（d2l 10.3）",
        "Attention Score Code 筆記（d2l 10.3）",
    ),
    "preset.d2l_additive.description": _(
        "20-dimensional queries, ten identical 2-D keys and values 0…39; the first batch row may see 2 keys, the "
        "second 6. Equal keys score equally, so the weights are uniform over the valid keys and the outputs are "
        "[2, 3, 4, 5] and [10, 11, 12, 13].",
        "20 维查询，十个相同的二维键，值为 0…39；批次第一行只能看 2 个键，第二行看 6 个。相同的键得分相同，所以权重在有效"
        "键上均匀分布，输出为 [2, 3, 4, 5] 和 [10, 11, 12, 13]。",
        "20 維查詢，十個相同的二維鍵，值為 0…39；批次第一列只能看 2 個鍵，第二列看 6 個。相同的鍵得分相同，所以權重在有效"
        "鍵上均勻分布，輸出為 [2, 3, 4, 5] 和 [10, 11, 12, 13]。",
    ),
    "preset.d2l_dot_product.title": _(
        "d2l: scaled dot-product attention with valid lengths [2, 6]",
        "d2l：缩放点积注意力，有效长度 [2, 6]",
        "d2l：縮放點積注意力，有效長度 [2, 6]",
    ),
    "preset.d2l_dot_product.source": _(
        "Attention Score Code note (d2l 10.3)",
        "Attention Score Code 笔记（d2l 10.3）",
        "Attention Score Code 筆記（d2l 10.3）",
    ),
    "preset.d2l_dot_product.description": _(
        "The same keys, values and valid lengths with 2-D queries and the scaled dot product: again uniform weights "
        "over the valid keys.",
        "同样的键、值和有效长度，换成二维查询和缩放点积：有效键上的权重依然均匀。",
        "同樣的鍵、值和有效長度，換成二維查詢和縮放點積：有效鍵上的權重依然均勻。",
    ),
    "preset.unit_sentences.title": _(
        "Self-attention on unit-normalised sentences", "单位归一化句子上的自注意力", "單位正規化句子上的自注意力"
    ),
    "preset.unit_sentences.source": _("Attention核心思想 note", "Attention 核心思想笔记", "Attention 核心思想筆記"),
    "preset.unit_sentences.description": _(
        "The note's two 'sentences' of four unit vectors (10-D). With identity projections the dot product of a token "
        "with itself is 1 and the highest score in each row, so every token attends most to itself.",
        "笔记中由四个单位向量（10 维）组成的两个“句子”。投影为单位矩阵时，词元与自身的点积为 1，是每行的最高分，"
        "所以每个词元最关注自己。",
        "筆記中由四個單位向量（10 維）組成的兩個「句子」。投影為單位矩陣時，詞元與自身的點積為 1，是每列的最高分，"
        "所以每個詞元最關注自己。",
    ),
    "preset.decoder_state.title": _(
        "Seq2seq: a decoder state attends over encoder states (dot)",
        "Seq2seq：解码器状态关注编码器状态（点积）",
        "Seq2seq：解碼器狀態關注編碼器狀態（點積）",
    ),
    "preset.decoder_state.source": _(
        "Attention note (主要组成: Q, K, V)",
        "Attention 笔记（主要组成：Q, K, V）",
        "Attention 筆記（主要組成：Q, K, V）",
    ),
    "preset.decoder_state.description": _(
        "Batch 10, hidden size 256, 12 encoder states: one decoder query per batch row through seeded W_q, W_k, W_v, "
        "dot-product scores. Outputs (10, 1, 256), weights (10, 1, 12).",
        "批大小 10，隐藏维度 256，12 个编码器状态：每个批次行一个解码器查询，经过种子生成的 W_q、W_k、W_v，用点积评分。"
        "输出 (10, 1, 256)，权重 (10, 1, 12)。",
        "批次大小 10，隱藏維度 256，12 個編碼器狀態：每個批次列一個解碼器查詢，經過種子產生的 W_q、W_k、W_v，用點積評分。"
        "輸出 (10, 1, 256)，權重 (10, 1, 12)。",
    ),
    "preset.decoder_state_cosine.title": _(
        "Seq2seq: the same with cosine similarity", "Seq2seq：同上，改用余弦相似度", "Seq2seq：同上，改用餘弦相似度"
    ),
    "preset.decoder_state_cosine.source": _(
        "Attention note (主要组成: Q, K, V)",
        "Attention 笔记（主要组成：Q, K, V）",
        "Attention 筆記（主要組成：Q, K, V）",
    ),
    "preset.decoder_state_cosine.description": _(
        "The note's second attention type: cosine similarity of the projected query and keys, so the scores lie in "
        "[−1, 1] and the weights stay soft.",
        "笔记中的第二种注意力：投影后的查询与键的余弦相似度，所以分数在 [−1, 1] 之间，权重保持柔和。",
        "筆記中的第二種注意力：投影後的查詢與鍵的餘弦相似度，所以分數在 [−1, 1] 之間，權重保持柔和。",
    ),
    "preset.concat_linear.title": _(
        "Softmax(Linear([Q, K])) with query and key size 32",
        "Softmax(Linear([Q, K]))，查询与键的维度为 32",
        "Softmax(Linear([Q, K]))，查詢與鍵的維度為 32",
    ),
    "preset.concat_linear.source": _("Attention note (Input)", "Attention 笔记（Input）", "Attention 筆記（Input）"),
    "preset.concat_linear.description": _(
        "The note's Attn layer: query_size = key_size = 32 and value_size1 = 32 positions of 64-dimensional values; "
        "each key is scored by one linear layer on [q; k].",
        "笔记中的 Attn 层：query_size = key_size = 32，value_size1 = 32 个位置的 64 维值；每个键由 [q; k] 上的一个线性层打分。",
        "筆記中的 Attn 層：query_size = key_size = 32，value_size1 = 32 個位置的 64 維值；每個鍵由 [q; k] 上的一個線性層打分。",
    ),
    "preset.cross_residual.title": _(
        "Cross-attention with the residual E + ΔE", "带残差 E + ΔE 的交叉注意力", "帶殘差 E + ΔE 的交叉注意力"
    ),
    "preset.cross_residual.source": _("Cross Attention note", "Cross Attention 笔记", "Cross Attention 筆記"),
    "preset.cross_residual.description": _(
        "A target sentence (queries) attends over a source sentence in another language (keys and values); the "
        "attended output ΔE is added back to the target embeddings E.",
        "目标句（查询）关注另一种语言的源句（键和值）；注意力输出 ΔE 被加回目标句的嵌入 E。",
        "目標句（查詢）關注另一種語言的源句（鍵和值）；注意力輸出 ΔE 被加回目標句的嵌入 E。",
    ),
    "preset.d2l_toy_regression.title": _(
        "d2l's toy data: 2 sin(x) + x^0.8 with noise",
        "d2l 的玩具数据：带噪声的 2 sin(x) + x^0.8",
        "d2l 的玩具資料：帶雜訊的 2 sin(x) + x^0.8",
    ),
    "preset.d2l_toy_regression.source": _(
        "Attention Score note (d2l 10.2)", "Attention Score 笔记（d2l 10.2）", "Attention Score 筆記（d2l 10.2）"
    ),
    "preset.d2l_toy_regression.description": _(
        "50 noisy training points of f(x) = 2 sin(x) + x^0.8 on [0, 5) and 50 query points; Gaussian kernel. Learn the "
        "bandwidth to see the fit improve.",
        "在 [0, 5) 上取 f(x) = 2 sin(x) + x^0.8 的 50 个带噪声训练点和 50 个查询点；高斯核。学习带宽，看拟合变好。",
        "在 [0, 5) 上取 f(x) = 2 sin(x) + x^0.8 的 50 個帶雜訊訓練點和 50 個查詢點；高斯核。學習頻寬，看擬合變好。",
    ),
}
