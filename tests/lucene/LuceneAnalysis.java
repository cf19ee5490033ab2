// Lucene's own answers, for tests that check pith-graph's Python emulation of what Neo4j's
// full-text indexes do (api/reads/words.py, api/reads/folding.py, api/reads/bm25.py).
//
// Run with the Lucene jars Neo4j uses (scripts/neo4j-launcher/target/lib):
//   java -cp 'lib/*' LuceneAnalysis.java tokens   < lines   one base64 UTF-8 text per line in;
//                                                            per line out, its tokens under
//                                                            StandardAnalyzer(no stop words),
//                                                            each base64, space-separated
//   java -cp 'lib/*' LuceneAnalysis.java fold                every BMP char ASCIIFoldingFilter
//                                                            changes: "hex<TAB>hex hex ..."
//   java -cp 'lib/*' LuceneAnalysis.java lower               every code point whose
//                                                            Character.toLowerCase differs
//   java -cp 'lib/*' LuceneAnalysis.java norms               SmallFloat.byte4ToInt for 0..255
//   java -cp 'lib/*' LuceneAnalysis.java classes             each code point's part in
//                                                            StandardTokenizer's words, found by
//                                                            probing it: runs "first<TAB>last<TAB>class"
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.StringJoiner;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.miscellaneous.ASCIIFoldingFilter;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.analysis.standard.StandardTokenizer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.tokenattributes.TypeAttribute;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.util.SmallFloat;

public class LuceneAnalysis {
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        switch (args[0]) {
            case "tokens" -> tokens(out);
            case "fold" -> fold(out);
            case "lower" -> lower(out);
            case "norms" -> norms(out);
            case "classes" -> classes(out);
            default -> throw new IllegalArgumentException(args[0]);
        }
        out.flush();
    }

    static void tokens(PrintStream out) throws Exception {
        Base64.Decoder decoder = Base64.getDecoder();
        Base64.Encoder encoder = Base64.getEncoder();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Analyzer analyzer = new StandardAnalyzer(CharArraySet.EMPTY_SET)) {
            String line;
            while ((line = in.readLine()) != null) {
                String text = new String(decoder.decode(line.trim()), StandardCharsets.UTF_8);
                StringJoiner joined = new StringJoiner(" ");
                try (TokenStream stream = analyzer.tokenStream("f", text)) {
                    CharTermAttribute term = stream.addAttribute(CharTermAttribute.class);
                    stream.reset();
                    while (stream.incrementToken()) {
                        joined.add(encoder.encodeToString(term.toString().getBytes(StandardCharsets.UTF_8)));
                    }
                    stream.end();
                }
                out.println(joined);
            }
        }
    }

    static void fold(PrintStream out) {
        char[] input = new char[1];
        char[] output = new char[8];
        for (int c = 0; c <= 0xFFFF; c++) {
            if (Character.isSurrogate((char) c)) {
                continue;
            }
            input[0] = (char) c;
            int length = ASCIIFoldingFilter.foldToASCII(input, 0, output, 0, 1);
            String folded = new String(output, 0, length);
            if (!folded.equals(String.valueOf((char) c))) {
                StringJoiner codes = new StringJoiner(" ");
                folded.codePoints().forEach(p -> codes.add(Integer.toHexString(p)));
                out.println(Integer.toHexString(c) + "\t" + codes);
            }
        }
    }

    static void lower(PrintStream out) {
        for (int c = 0; c <= 0x10FFFF; c++) {
            int lowered = Character.toLowerCase(c);
            if (lowered != c) {
                out.println(Integer.toHexString(c) + "\t" + Integer.toHexString(lowered));
            }
        }
    }

    static void norms(PrintStream out) {
        for (int i = 0; i < 256; i++) {
            out.println(SmallFloat.byte4ToInt((byte) i));
        }
    }

    static StandardTokenizer tokenizer = new StandardTokenizer();

    /** Tokens of text, each "type:text". */
    static List<String> probe(String text) throws Exception {
        List<String> found = new ArrayList<>();
        tokenizer.setReader(new StringReader(text));
        CharTermAttribute term = tokenizer.getAttribute(CharTermAttribute.class);
        TypeAttribute type = tokenizer.getAttribute(TypeAttribute.class);
        tokenizer.reset();
        while (tokenizer.incrementToken()) {
            found.add(type.type() + ":" + term);
        }
        tokenizer.end();
        tokenizer.close();
        return found;
    }

    static boolean one(List<String> tokens, String text) {
        return tokens.size() == 1 && tokens.get(0).endsWith(":" + text);
    }

    /**
     * L letter (ALetter, Hangul), h Hebrew letter, N numeric, K katakana, I ideograph (Han),
     * H hiragana, S south-east Asian (Complex_Context), M emoji character, b emoji modifier
     * base, m emoji modifier, E extend/format/ZWJ (joins the token before it), X ExtendNumLet,
     * B joins letters and digits (MidNumLet, Single_Quote), l joins letters (MidLetter),
     * d joins digits (MidNum), R regional indicator, O other.
     */
    static char classify(int c) throws Exception {
        String s = new String(Character.toChars(c));
        List<String> alone = probe(s);
        String modifier = new String(Character.toChars(0x1F3FD));
        if (alone.size() == 1 && alone.get(0).equals("<EMOJI>:" + s)) {
            if (c >= 0x1F3FB && c <= 0x1F3FF) {
                return 'm';
            }
            return one(probe(s + modifier), s + modifier) ? 'b' : 'M';
        }
        if (alone.size() == 1 && alone.get(0).endsWith(":" + s)) {
            String type = alone.get(0).substring(0, alone.get(0).indexOf(':'));
            switch (type) {
                case "<ALPHANUM>":
                    return one(probe(s + "'"), s + "'") ? 'h' : 'L';
                case "<HANGUL>": return 'L';
                case "<NUM>": return 'N';
                case "<KATAKANA>": return 'K';
                case "<IDEOGRAPHIC>": return 'I';
                case "<HIRAGANA>": return 'H';
                case "<SOUTHEAST_ASIAN>": return 'S';
                default: throw new IllegalStateException(type);
            }
        }
        if (c >= 0x1F1E6 && c <= 0x1F1FF) {
            return 'R';
        }
        boolean after = one(probe("a" + s), "a" + s);
        boolean before = one(probe(s + "a"), s + "a");
        if (after && before) {
            return 'X';
        }
        if (after) {
            return 'E';
        }
        boolean letters = one(probe("a" + s + "a"), "a" + s + "a");
        boolean digits = one(probe("1" + s + "1"), "1" + s + "1");
        if (letters && digits) {
            return 'B';
        }
        if (letters) {
            return 'l';
        }
        if (digits) {
            return 'd';
        }
        return 'O';
    }

    static void classes(PrintStream out) throws Exception {
        int start = 0;
        char current = classify(0);
        for (int c = 1; c <= 0x110000; c++) {
            char found;
            if (c == 0x110000) {
                found = '?';
            } else if (c >= 0xD800 && c <= 0xDFFF) {
                found = 'O';
            } else {
                found = classify(c);
            }
            if (found != current) {
                out.println(Integer.toHexString(start) + "\t" + Integer.toHexString(c - 1) + "\t" + current);
                start = c;
                current = found;
            }
        }
    }
}
